package api

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"hourglass/api/auth"
	"hourglass/api/opentsdbhttp"
	"hourglass/api/prom"
	"hourglass/api/promhttp"
	"hourglass/web"
)

// routeScope is the scope a route needs: def, or by method.
type routeScope struct {
	def     auth.Scope
	methods map[string]auth.Scope
}

var (
	read  = routeScope{def: auth.Read}
	write = routeScope{def: auth.Write}
	admin = routeScope{def: auth.Admin}
	// readWrite: reading is read, changing (POST, PUT, DELETE) is write.
	readWrite = routeScope{def: auth.Read, methods: map[string]auth.Scope{
		http.MethodPost: auth.Write, http.MethodPut: auth.Write, http.MethodDelete: auth.Write}}
	// query: reading, but the DELETE verb deletes points (a body's
	// "delete":true is checked by the handler, auth.Has).
	queryScope = routeScope{def: auth.Read, methods: map[string]auth.Scope{http.MethodDelete: auth.Admin}}
)

// openTSDBScopes is the scope of each OpenTSDB endpoint (by its path after
// /api/ and /api/v1/).
var openTSDBScopes = map[string]routeScope{
	"put":                  write,
	"query":                queryScope,
	"query/last":           read,
	"query/exp":            read,
	"query/gexp":           read,
	"suggest":              read,
	"search/lookup":        read,
	"search/{type}":        read,
	"uid/assign":           write,
	"uid/uidmeta":          readWrite,
	"uid/tsmeta":           readWrite,
	"uid/rename":           admin,
	"annotation":           readWrite,
	"annotations":          readWrite,
	"annotation/bulk":      write,
	"aggregators":          read,
	"config":               read,
	"config/filters":       read,
	"dropcaches":           admin,
	"stats":                read,
	"stats/jvm":            read,
	"stats/query":          read,
	"stats/region_clients": read,
	"stats/threads":        read,
	"version":              read,
	"rollup":               write,
	"histogram":            write,
	"tree":                 admin,
	"tree/{sub}":           admin,
}

// routeScopes is the one table of the scope each route needs, by the
// route's path template. A route missing from it needs admin (scopeOf).
var routeScopes = func() map[string]routeScope {
	m := map[string]routeScope{
		"/healthz":                            {def: auth.Open},
		"/metrics":                            read,
		"/":                                   read,
		"/index.html":                         read,
		web.Prefix:                            read,
		"/api/status":                         read,
		"/api/v1/write":                       write,
		"/api/v1/read":                        read,
		"/api/v1/query":                       queryScope,
		"/api/v1/query_range":                 read,
		"/api/v1/labels":                      read,
		"/api/v1/label/{name}/values":         read,
		"/api/v1/series":                      read,
		"/api/v1/metadata":                    read,
		"/api/v1/status/buildinfo":            read,
		"/api/v1/status/tsdb":                 read,
		"/api/v1/rules":                       read,
		"/api/v1/query_exemplars":             read,
		"/api/v1/admin/tsdb/delete_series":    admin,
		"/api/v1/admin/tsdb/clean_tombstones": admin,
		"/api/v1/admin/tsdb/snapshot":         admin,
		pprofPrefix:                           admin,
	}
	for p, sc := range openTSDBScopes {
		m["/api/"+p] = sc
		if p != "query" {
			m["/api/v1/"+p] = sc
		}
	}
	return m
}()

// pprofPrefix is where -debug.pprof mounts net/http/pprof.
const pprofPrefix = "/debug/pprof/"

// scopeOf is the scope a request needs: its route's in routeScopes, by
// method (a GET's method_override counts, as OpenTSDB applies it), admin
// for a route not in the table, and any credential for a path no route takes.
func scopeOf(r *http.Request) auth.Scope {
	route := mux.CurrentRoute(r)
	if route == nil {
		return auth.Any
	}
	tpl, err := route.GetPathTemplate()
	if err != nil {
		return auth.Admin
	}
	rs, ok := routeScopes[tpl]
	if !ok {
		return auth.Admin
	}
	method := r.Method
	if method == http.MethodGet {
		if o := r.URL.Query().Get("method_override"); o != "" {
			method = strings.ToUpper(o)
		}
	}
	if sc, ok := rs.methods[method]; ok {
		return sc
	}
	return rs.def
}

// isPreflight reports whether r is a CORS preflight: OPTIONS with Origin
// and Access-Control-Request-Method, which browsers send without
// credentials (the Fetch standard).
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" &&
		r.Header.Get("Access-Control-Request-Method") != ""
}

// authenticated is the router's authentication: a CORS preflight is
// answered without credentials and never reaches a handler (preflight);
// every other request needs the scope of its route (scopeOf).
func (s *Server) authenticated(next http.Handler) http.Handler {
	deny := func(w http.ResponseWriter, r *http.Request, code int, msg string) {
		if s.openTSDBRoute(r) {
			s.ots.CORSHeaders(w, r) // the browser then shows the refusal
		}
		denyAuth(w, r, code, msg)
	}
	checked := s.auth.Middleware(scopeOf, deny, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isPreflight(r) {
			s.preflight(w, r)
			return
		}
		checked.ServeHTTP(w, r)
	})
}

// preflight answers a CORS preflight with the OpenTSDB API's CORS policy
// (-cors-domains) on its routes; the other routes serve no CORS: 405.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	if s.openTSDBRoute(r) {
		s.ots.Preflight(w, r)
		return
	}
	http.Error(w, "CORS is served on the OpenTSDB API only (-cors-domains)", http.StatusMethodNotAllowed)
}

// openTSDBRoute reports whether the request's route is the OpenTSDB API's.
func (s *Server) openTSDBRoute(r *http.Request) bool {
	tpl := ""
	if route := mux.CurrentRoute(r); route != nil {
		tpl, _ = route.GetPathTemplate()
	}
	p, ok := strings.CutPrefix(tpl, "/api/v1/")
	if !ok {
		p, ok = strings.CutPrefix(tpl, "/api/")
	}
	_, ots := openTSDBScopes[p]
	return ok && ots && tpl != "/api/v1/query"
}

// mayDelete reports whether the request may delete points (a query's
// "delete":true needs admin, whatever its route needs).
func (s *Server) mayDelete(r *http.Request) bool {
	return s.auth == nil || auth.Has(r.Context(), auth.Admin)
}

// promPaths are the routes of the Prometheus dialect (api/promhttp/handler_routes.go).
var promPaths = map[string]bool{
	"/api/v1/query_range": true, "/api/v1/labels": true, "/api/v1/label/{name}/values": true,
	"/api/v1/series": true, "/api/v1/metadata": true, "/api/v1/status/buildinfo": true,
	"/api/v1/rules": true, "/api/v1/query_exemplars": true,
	"/api/v1/admin/tsdb/delete_series": true, "/api/v1/admin/tsdb/clean_tombstones": true,
}

// denyAuth writes a 401 or 403 in the dialect of the request's route:
// Prometheus' JSON envelope for its query API, plain text for remote write
// and read (as Prometheus' receiver answers) and paths outside /api,
// OpenTSDB's error object for the rest of /api.
func denyAuth(w http.ResponseWriter, r *http.Request, code int, msg string) {
	tpl := ""
	if route := mux.CurrentRoute(r); route != nil {
		tpl, _ = route.GetPathTemplate()
	}
	typ := "unauthorized"
	if code == http.StatusForbidden {
		typ = "forbidden"
	}
	switch {
	case promPaths[tpl] || (tpl == "/api/v1/query" && (r.URL.Query().Has("query") || promhttp.IsForm(r))):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(prom.AppendError(nil, typ, msg))
	case tpl == "/api/v1/write" || tpl == "/api/v1/read" || !strings.HasPrefix(r.URL.Path, "/api/"):
		http.Error(w, msg, code)
	default:
		opentsdbhttp.WriteError(w, code, msg, "")
	}
}
