package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTSDBStatusThroughTheBinary writes series over /api/put and compares
// /api/v1/status/tsdb with them: a metric with an exploding id label
// (50 series), one with 3 hosts; limit=2 cuts every list to two.
func TestTSDBStatusThroughTheBinary(t *testing.T) {
	s := start(t, t.TempDir())
	var pts []point
	for i := range 50 {
		pts = append(pts, point{metric: "ops.requests", tags: map[string]string{"id": fmt.Sprintf("req-%02d", i), "host": "h0"}, ts: 1_700_000_000_000, value: int64(i)})
	}
	for i := range 3 {
		pts = append(pts, point{metric: "ops.cpu", tags: map[string]string{"host": fmt.Sprint("h", i)}, ts: 1_700_000_000_000, value: int64(i)})
	}
	if code, body := s.do("POST", "/api/put", "application/json", putBody(pts)); code != http.StatusNoContent {
		t.Fatalf("put: %d %s", code, body)
	}
	code, body := s.do("GET", "/api/v1/status/tsdb?limit=2", "", nil)
	if code != 200 {
		t.Fatalf("status/tsdb: %d %s", code, body)
	}
	type stat struct {
		Name  string `json:"name"`
		Value uint64 `json:"value"`
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			HeadStats struct {
				NumSeries     uint64 `json:"numSeries"`
				NumLabelPairs int    `json:"numLabelPairs"`
				MinTime       int64  `json:"minTime"`
				MaxTime       int64  `json:"maxTime"`
			} `json:"headStats"`
			SeriesCountByMetricName     []stat `json:"seriesCountByMetricName"`
			LabelValueCountByLabelName  []stat `json:"labelValueCountByLabelName"`
			MemoryInBytesByLabelName    []stat `json:"memoryInBytesByLabelName"`
			SeriesCountByLabelValuePair []stat `json:"seriesCountByLabelValuePair"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	d := r.Data
	// pairs: __name__ ×2, id ×50, host h0..h2
	if r.Status != "success" || d.HeadStats.NumSeries != 53 || d.HeadStats.NumLabelPairs != 55 ||
		d.HeadStats.MinTime != 1_700_000_000_000 || d.HeadStats.MaxTime != 1_700_000_000_000 {
		t.Errorf("headStats %+v", d.HeadStats)
	}
	check := func(what string, got, want []stat) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("seriesCountByMetricName", d.SeriesCountByMetricName, []stat{{"ops.requests", 50}, {"ops.cpu", 3}})
	check("labelValueCountByLabelName", d.LabelValueCountByLabelName, []stat{{"id", 50}, {"host", 3}})
	// id+req-NN is 8 bytes ×50; __name__ with ops.requests 20 ×50 and ops.cpu 15 ×3
	check("memoryInBytesByLabelName", d.MemoryInBytesByLabelName, []stat{{"__name__", 1045}, {"id", 400}})
	check("seriesCountByLabelValuePair", d.SeriesCountByLabelValuePair, []stat{{"host=h0", 51}, {"__name__=ops.requests", 50}})
}

// TestVersionFromBuildStamp builds the binary with the vcs stamp on (the
// default of `go build` in a git checkout; this machine's GOFLAGS turns it
// off) and checks that /api/version and /api/v1/status/buildinfo report the
// checkout's commit, its time and whether the work tree was modified.
func TestVersionFromBuildStamp(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	// go build stamps checkouts whose .git is a directory: not git
	// worktrees, whose .git is a file (cmd/go looks for a .git directory).
	if fi, err := os.Stat(filepath.Join("..", ".git")); err != nil || !fi.IsDir() {
		t.Skip("go build records no vcs stamp here: ../.git is not a directory (a git worktree, or no checkout)")
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	commitTime, err := exec.Command("git", "log", "-1", "--format=%ct", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hourglass")
	build := exec.Command("go", "build", "-buildvcs=true", "-pgo=off", "-o", bin, "hourglass/cmd/hourglass")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	status, err := exec.Command("git", "status", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	saved := binPath
	binPath = bin
	s := start(t, t.TempDir())
	binPath = saved

	full := strings.TrimSpace(string(rev))
	var v map[string]string
	code, body := s.do("GET", "/api/version", "", nil)
	if err := json.Unmarshal(body, &v); code != 200 || err != nil {
		t.Fatalf("/api/version: %d %s", code, body)
	}
	wantStatus := "MINT"
	if len(bytes.TrimSpace(status)) > 0 {
		wantStatus = "MODIFIED"
	}
	if v["full_revision"] != full || v["short_revision"] != full[:7] || v["timestamp"] != strings.TrimSpace(string(commitTime)) ||
		v["repo_status"] != wantStatus || v["repo"] != "hourglass" {
		t.Errorf("/api/version %v, want revision %s at %s, %s", v, full, commitTime, wantStatus)
	}
	code, body = s.do("GET", "/api/v1/status/buildinfo", "", nil)
	var bi struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(body, &bi); code != 200 || err != nil {
		t.Fatalf("buildinfo: %d %s", code, body)
	}
	ct, _ := strconv.ParseInt(strings.TrimSpace(string(commitTime)), 10, 64)
	wantRev := full
	if wantStatus == "MODIFIED" {
		wantRev += "-modified"
	}
	if bi.Data["revision"] != wantRev || bi.Data["buildDate"] != time.Unix(ct, 0).UTC().Format("20060102-15:04:05") || !strings.HasPrefix(bi.Data["goVersion"], "go1.") {
		t.Errorf("buildinfo %v, want revision %s", bi.Data, wantRev)
	}
}
