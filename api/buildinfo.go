package api

import (
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"hourglass/api/opentsdbhttp"
	"hourglass/api/prom"
	"hourglass/api/promhttp"
)

// buildInfo is what the binary knows of its own build, from the Go
// toolchain's build information (runtime/debug.ReadBuildInfo): the module
// path and the version control stamp (vcs.revision, vcs.time,
// vcs.modified), which `go build` records in a git checkout unless
// -buildvcs=false. Go records no build time and no branch: the time is the
// commit's.
type buildInfo struct {
	Module    string    // the main module's path
	Revision  string    // the commit; "" when not stamped
	Time      time.Time // the commit's time; zero when not stamped
	Modified  bool      // the work tree had changes
	Stamped   bool      // the build carries a vcs stamp
	Checkout  bool      // no stamp: Revision and Branch were read from a git checkout
	Branch    string    // the checkout's branch (Checkout only)
	GoVersion string
}

// readBuildInfo is the build's information, read once. Without a vcs stamp
// (`go run`, `go test`, -buildvcs=false), the revision is read from the
// git checkout the binary's source was in (its compiled-in path), else from
// the one around the working directory: see readCheckout.
var readBuildInfo = sync.OnceValue(func() buildInfo {
	b := buildInfo{Module: "hourglass", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		parseBuildSettings(&b, bi)
	}
	if !b.Stamped {
		dirs := []string{}
		if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
			dirs = append(dirs, filepath.Dir(file))
		}
		if wd, err := os.Getwd(); err == nil {
			dirs = append(dirs, wd)
		}
		for _, d := range dirs {
			if rev, branch, ok := readCheckout(d); ok {
				b.Revision, b.Branch, b.Checkout = rev, branch, true
				break
			}
		}
	}
	return b
})

// readCheckout finds the git checkout around dir (a .git directory, or a
// .git file naming the git directory as worktrees have, in dir or a parent)
// and reads its HEAD commit and branch with plain file reads (HEAD, the ref
// file, packed-refs; no git command). ok is false when there is none or its
// HEAD does not resolve to a commit hash.
func readCheckout(dir string) (rev, branch string, ok bool) {
	gitDir := ""
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", "", false
	}
	for {
		p := filepath.Join(d, ".git")
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				gitDir = p
			} else if b, err := os.ReadFile(p); err == nil && strings.HasPrefix(string(b), "gitdir:") {
				gitDir = strings.TrimSpace(strings.TrimPrefix(string(b), "gitdir:"))
				if !filepath.IsAbs(gitDir) {
					gitDir = filepath.Join(d, gitDir)
				}
			}
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", "", false
		}
		d = parent
	}
	if gitDir == "" {
		return "", "", false
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", "", false
	}
	h := strings.TrimSpace(string(head))
	ref, isRef := strings.CutPrefix(h, "ref: ")
	if !isRef {
		return hashOK(h, "")
	}
	branch = strings.TrimPrefix(ref, "refs/heads/")
	// A worktree's refs live in the common git directory.
	common := gitDir
	if c, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	for _, d := range []string{gitDir, common} {
		if b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
			return hashOK(strings.TrimSpace(string(b)), branch)
		}
	}
	packed, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil {
		return "", "", false
	}
	for _, line := range strings.Split(string(packed), "\n") {
		if r, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == ref {
			return hashOK(r, branch)
		}
	}
	return "", "", false
}

// hashOK returns rev and branch when rev is a commit hash (SHA-1 or
// SHA-256, in hex), else nothing.
func hashOK(rev, branch string) (string, string, bool) {
	if len(rev) != 40 && len(rev) != 64 {
		return "", "", false
	}
	for _, c := range rev {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", "", false
		}
	}
	return rev, branch, true
}

func parseBuildSettings(b *buildInfo, bi *debug.BuildInfo) {
	if bi.Main.Path != "" {
		b.Module = bi.Main.Path
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			b.Revision, b.Stamped = st.Value, true
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, st.Value); err == nil {
				b.Time = t
			}
		case "vcs.modified":
			b.Modified = st.Value == "true"
		}
	}
}

// versionInfo is OpenTSDB's /api/version: every field a string.
// repo_status is MODIFIED or MINT as the build's stamp says, UNSTAMPED
// when the revision was read from the checkout (see readBuildInfo; branch
// is then its branch), UNKNOWN without either; timestamp the commit's time in Unix seconds, user the
// account the server runs as (OpenTSDB's is who built it, which Go does
// not record).
func (s *Server) versionInfo() map[string]string {
	b := readBuildInfo()
	v := map[string]string{
		"version": s.cfg.Version, "short_revision": b.Revision[:min(7, len(b.Revision))], "full_revision": b.Revision,
		"timestamp": "", "repo_status": "UNKNOWN", "user": "", "host": opentsdbhttp.Hostname(), "repo": b.Module, "branch": "",
	}
	if !b.Time.IsZero() {
		v["timestamp"] = strconv.FormatInt(b.Time.Unix(), 10)
	}
	switch {
	case b.Stamped:
		v["repo_status"] = map[bool]string{true: "MODIFIED", false: "MINT"}[b.Modified]
	case b.Checkout:
		v["repo_status"], v["branch"] = "UNSTAMPED", b.Branch
	}
	if u, err := user.Current(); err == nil {
		v["user"] = u.Username
	}
	return v
}

// promBuildInfo is the data of /api/v1/status/buildinfo. version is the Prometheus
// release whose engine is embedded (clients enable features by it);
// revision is hourglass's commit (with "-modified" for a changed work tree,
// "-unstamped" when read from the checkout for want of a vcs stamp,
// "unknown" when neither is there), buildDate the commit's time
// as Prometheus writes its build date, branch "hourglass" (Go records none).
func promBuildInfo() []byte {
	b := readBuildInfo()
	rev := b.Revision
	switch {
	case rev == "":
		rev = "unknown"
	case b.Modified:
		rev += "-modified"
	case b.Checkout:
		rev += "-unstamped"
	}
	date := ""
	if !b.Time.IsZero() {
		date = b.Time.UTC().Format("20060102-15:04:05")
	}
	out := []byte(`{"version":`)
	out = prom.AppendString(out, promhttp.PromAPIVersion)
	out = append(out, `,"revision":`...)
	out = prom.AppendString(out, rev)
	out = append(out, `,"branch":"hourglass","buildUser":"","buildDate":`...)
	out = prom.AppendString(out, date)
	out = append(out, `,"goVersion":`...)
	out = prom.AppendString(out, b.GoVersion)
	out = append(out, '}')
	return out
}
