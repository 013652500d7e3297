package api

import (
	"net/http"
	"os/user"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"hourglass/api/opentsdbhttp"
	"hourglass/api/prom"
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
	GoVersion string
}

func readBuildInfo() buildInfo {
	b := buildInfo{Module: "hourglass", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	parseBuildSettings(&b, bi)
	return b
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
// repo_status is MODIFIED or MINT as the build's stamp says (UNKNOWN
// without one), timestamp the commit's time in Unix seconds, user the
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
	if b.Stamped {
		v["repo_status"] = map[bool]string{true: "MODIFIED", false: "MINT"}[b.Modified]
	}
	if u, err := user.Current(); err == nil {
		v["user"] = u.Username
	}
	return v
}

// handleBuildInfo is /api/v1/status/buildinfo. version is the Prometheus
// release whose engine is embedded (clients enable features by it);
// revision is hourglass's commit (with "-modified" for a changed work tree,
// "unknown" when the build has no vcs stamp), buildDate the commit's time
// as Prometheus writes its build date, branch "hourglass" (Go records none).
func (p *promAPI) handleBuildInfo(w http.ResponseWriter, r *http.Request) {
	b := readBuildInfo()
	rev := b.Revision
	switch {
	case rev == "":
		rev = "unknown"
	case b.Modified:
		rev += "-modified"
	}
	date := ""
	if !b.Time.IsZero() {
		date = b.Time.UTC().Format("20060102-15:04:05")
	}
	out := []byte(`{"version":`)
	out = prom.AppendString(out, PromAPIVersion)
	out = append(out, `,"revision":`...)
	out = prom.AppendString(out, rev)
	out = append(out, `,"branch":"hourglass","buildUser":"","buildDate":`...)
	out = prom.AppendString(out, date)
	out = append(out, `,"goVersion":`...)
	out = prom.AppendString(out, b.GoVersion)
	out = append(out, '}')
	p.respond(w, out, nil, nil)
}
