// Package web is the page hourglass serves at /: a query builder for the
// OpenTSDB and PromQL dialects, a chart drawn on a canvas, a table, and a
// status panel, all talking to the server's own HTTP API from the browser.
//
// The page is plain HTML, CSS and JavaScript modules of our own, embedded in
// the binary with go:embed: there is no build step, and nothing is fetched
// from anywhere but the server at run time. static/ holds the files;
// static/app.js runs the queries and wires the page together from modules
// by job: state.js (the state and the URL that holds it), controls.js (the
// query controls), api.js (requests to the API), query.js (query building),
// errors.js (errors shown next to their control), table.js (the table and
// the downloads), status.js (the status panel), chart.js (the chart),
// cardinality.js (the cardinality panel) and start.js (the view a page
// opened without a query starts on). Every file under static/ is embedded
// and served under Prefix.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gorilla/mux"
)

//go:embed static
var static embed.FS

// Prefix is the path under which the page's assets are served.
const Prefix = "/web/"

// csp allows the page nothing but its own origin: scripts and styles come
// from /web/, data from /api/, and downloads are blob: URLs made in the page.
const csp = "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'self'; form-action 'self'"

type file struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the page at / and its assets under Prefix; any other path
// is 404. Only GET and HEAD are served. Replies carry an ETag and ask the
// browser to revalidate, so a new binary's page is never mixed with an old
// one's cached script. Handler is safe for concurrent use.
func Handler() http.Handler {
	files := map[string]file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) {
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".html":
			ct = "text/html; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		files[strings.TrimPrefix(p, "static/")] = file{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		// The files are compiled in: failing to read them is a broken build.
		panic("web: reading the embedded files: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := ""
		switch p := r.URL.Path; {
		case p == "/" || p == "/index.html":
			name = "index.html"
		case strings.HasPrefix(p, Prefix):
			name = strings.TrimPrefix(p, Prefix)
		}
		f, ok := files[name]
		if !ok || name == "" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("ETag", f.etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		if name == "index.html" {
			h.Set("Content-Security-Policy", csp)
			h.Set("Referrer-Policy", "no-referrer")
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
	})
}

// Register mounts the page on r: / and everything under Prefix. Other paths
// stay with r's other routes and its NotFoundHandler.
func Register(r *mux.Router) {
	h := Handler()
	r.Handle("/", h)
	r.Handle("/index.html", h)
	r.PathPrefix(Prefix).Handler(h)
}
