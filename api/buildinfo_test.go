package api

import (
	"encoding/json"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestParseBuildSettings reads the vcs stamp as `go build` records it.
func TestParseBuildSettings(t *testing.T) {
	var b buildInfo
	parseBuildSettings(&b, &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "hourglass"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-25T14:30:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}})
	want := buildInfo{Module: "hourglass", Revision: "0123456789abcdef0123456789abcdef01234567",
		Time: time.Date(2026, 11, 25, 14, 30, 0, 0, time.UTC), Modified: true, Stamped: true, GoVersion: "go1.26.0"}
	if b != want {
		t.Errorf("got %+v\nwant %+v", b, want)
	}
}

// TestVersionEndpoints: both endpoints report what readBuildInfo reads (a
// test binary carries no vcs stamp: go test does not stamp), in their
// dialects' shapes.
func TestVersionEndpoints(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.Version = "1.2.3" })
	b := readBuildInfo()
	code, ar := ps.api("GET", "/api/v1/status/buildinfo", nil)
	var bi map[string]string
	if err := json.Unmarshal(ar.Data, &bi); code != 200 || err != nil {
		t.Fatalf("buildinfo: %d %s", code, ar.Data)
	}
	wantRev := "unknown"
	if b.Stamped {
		wantRev = b.Revision
		if b.Modified {
			wantRev += "-modified"
		}
	}
	if bi["version"] != PromAPIVersion || bi["revision"] != wantRev || bi["goVersion"] != runtime.Version() || bi["branch"] != "hourglass" {
		t.Errorf("buildinfo %v, want revision %q", bi, wantRev)
	}
	rec := httptest.NewRecorder()
	ps.h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/version", nil))
	var v map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != 200 || err != nil {
		t.Fatalf("/api/version: %d %s", rec.Code, rec.Body)
	}
	if v["version"] != "1.2.3" || v["full_revision"] != b.Revision || v["user"] == "" || v["host"] == "" || v["repo"] != b.Module {
		t.Errorf("/api/version %v", v)
	}
	if want := map[bool]string{true: "MINT", false: "UNKNOWN"}[b.Stamped]; !b.Modified && v["repo_status"] != want {
		t.Errorf("repo_status %q, want %q", v["repo_status"], want)
	}
}
