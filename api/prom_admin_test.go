package api

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hourglass/store"
)

// TestSnapshotHandler: the admin switch, the skip_head parameter, the
// method, and a snapshot named as Prometheus names them, laid out as a
// data directory.
func TestSnapshotHandler(t *testing.T) {
	const path = "/api/v1/admin/tsdb/snapshot"
	off := newPromServer(t, nil)
	if code, r := off.api("POST", path, nil); code != 503 || r.Error != "admin APIs disabled" {
		t.Errorf("without -allow-delete: %d %+v", code, r)
	}
	dir := filepath.Join(t.TempDir(), "snapshots")
	ps := newPromServer(t, func(c *Config) { c.AllowDelete = true; c.SnapshotDir = dir })
	if code, r := ps.api("POST", path, url.Values{"skip_head": {"maybe"}}); code != 400 || r.ErrorType != "bad_data" {
		t.Errorf("skip_head=maybe: %d %+v", code, r)
	}
	if r := ps.do("GET", path, nil, nil); r.code != 405 {
		t.Errorf("GET: %d", r.code)
	}
	names := map[string]bool{}
	for _, form := range []url.Values{nil, {"skip_head": {"true"}}} {
		code, r := ps.api("POST", path, form)
		if code != 200 || r.Status != "success" {
			t.Fatalf("snapshot %v: %d %+v", form, code, r)
		}
		var data struct{ Name string }
		if err := json.Unmarshal(r.Data, &data); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^\d{8}T\d{6}Z-[0-9a-f]{16}$`).MatchString(data.Name) {
			t.Errorf("name %q is not like Prometheus' 20261125T143000Z-0123456789abcdef", data.Name)
		}
		for _, sub := range []string{"store", "wal"} {
			if fi, err := os.Stat(filepath.Join(dir, data.Name, sub)); err != nil || !fi.IsDir() {
				t.Errorf("snapshot %s has no %s directory: %v", data.Name, sub, err)
			}
		}
		names[data.Name] = true
	}
	if len(names) != 2 {
		t.Errorf("two snapshots got one name: %v", names)
	}
}

// noCheckpointStore hides the store's Checkpoint, as Bigtable's store has none.
type noCheckpointStore struct{ store.Store }

// TestSnapshotUnsupportedStore: on a store that cannot copy itself the
// answer is 501, naming Bigtable's backups.
func TestSnapshotUnsupportedStore(t *testing.T) {
	ps := newPromServerOver(t, func(st store.Store) store.Store { return noCheckpointStore{st} }, func(c *Config) { c.AllowDelete = true })
	code, r := ps.api("POST", "/api/v1/admin/tsdb/snapshot", nil)
	if code != 501 || r.Status != "error" || !strings.Contains(r.Error, "gcloud bigtable backups create") {
		t.Errorf("snapshot on a store without checkpoints: %d %+v", code, r)
	}
}
