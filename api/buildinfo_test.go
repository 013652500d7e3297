package api

import (
	"encoding/json"
	"hourglass/api/promhttp"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
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
	switch {
	case b.Stamped && b.Modified:
		wantRev = b.Revision + "-modified"
	case b.Stamped:
		wantRev = b.Revision
	case b.Checkout:
		wantRev = b.Revision + "-unstamped"
	}
	if bi["version"] != promhttp.PromAPIVersion || bi["revision"] != wantRev || bi["goVersion"] != runtime.Version() || bi["branch"] != "hourglass" {
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
	want := map[bool]string{true: "MINT", false: "UNKNOWN"}[b.Stamped]
	if b.Checkout {
		want = "UNSTAMPED"
		if v["branch"] != b.Branch {
			t.Errorf("branch %q, want %q", v["branch"], b.Branch)
		}
	}
	if !b.Modified && v["repo_status"] != want {
		t.Errorf("repo_status %q, want %q", v["repo_status"], want)
	}
}

// TestReadCheckout reads HEAD as git lays it out: a branch in a loose ref
// file, a branch only in packed-refs, a detached HEAD, a worktree's .git
// file with its commondir, found from a subdirectory; and finds nothing
// outside a checkout or when HEAD names no commit.
func TestReadCheckout(t *testing.T) {
	const revA = "0123456789abcdef0123456789abcdef01234567"
	const revB = "89abcdef0123456789abcdef0123456789abcdef"
	write := func(t *testing.T, path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, dir, wantRev, wantBranch string, wantOK bool) {
		t.Helper()
		rev, branch, ok := readCheckout(dir)
		if rev != wantRev || branch != wantBranch || ok != wantOK {
			t.Errorf("readCheckout(%s) = %q, %q, %v; want %q, %q, %v", dir, rev, branch, ok, wantRev, wantBranch, wantOK)
		}
	}
	t.Run("loose ref, from a subdirectory", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(root, ".git", "refs", "heads", "main"), revA+"\n")
		write(t, filepath.Join(root, ".git", "packed-refs"), "# pack-refs with: peeled fully-peeled sorted\n"+revB+" refs/heads/main\n")
		sub := filepath.Join(root, "api", "prom")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		check(t, sub, revA, "main", true) // the loose ref wins over packed-refs, as in git
	})
	t.Run("packed ref", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/feature/x\n")
		write(t, filepath.Join(root, ".git", "packed-refs"), "# pack-refs with: peeled\n"+revA+" refs/heads/main\n"+revB+" refs/heads/feature/x\n^"+revA+"\n")
		check(t, root, revB, "feature/x", true)
	})
	t.Run("detached HEAD", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, ".git", "HEAD"), revB+"\n")
		check(t, root, revB, "", true)
	})
	t.Run("worktree", func(t *testing.T) {
		root := t.TempDir()
		common := filepath.Join(root, "main", ".git")
		write(t, filepath.Join(common, "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(common, "refs", "heads", "main"), revA+"\n")
		write(t, filepath.Join(common, "refs", "heads", "wt"), revB+"\n")
		write(t, filepath.Join(common, "worktrees", "wt", "HEAD"), "ref: refs/heads/wt\n")
		write(t, filepath.Join(common, "worktrees", "wt", "commondir"), "../..\n")
		write(t, filepath.Join(root, "wt", ".git"), "gitdir: "+filepath.Join(common, "worktrees", "wt")+"\n")
		check(t, filepath.Join(root, "wt"), revB, "wt", true)
	})
	t.Run("this checkout, as git reads it", func(t *testing.T) {
		want, err := exec.Command("git", "rev-parse", "HEAD").Output()
		if err != nil {
			t.Skipf("git rev-parse HEAD: %v (no git, or not a checkout)", err)
		}
		branch, _ := exec.Command("git", "symbolic-ref", "--short", "-q", "HEAD").Output()
		check(t, ".", strings.TrimSpace(string(want)), strings.TrimSpace(string(branch)), true)
	})
	t.Run("none", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, "x", ".git", "HEAD"), "ref: refs/heads/gone\n") // no such ref
		check(t, filepath.Join(root, "x"), "", "", false)
		write(t, filepath.Join(root, "y", ".git", "HEAD"), "not a hash\n")
		check(t, filepath.Join(root, "y"), "", "", false)
	})
}
