package opentsdbhttp

import (
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/klauspost/compress/gzip"

	"hourglass/api/opentsdb"
)

// openTSDBEndpoint is one endpoint of the OpenTSDB HTTP API: its path after
// /api/ (and /api/v1/), the verbs it takes and its handler.
type openTSDBEndpoint struct {
	path    string
	methods []string
	h       http.HandlerFunc
}

// Routes registers the OpenTSDB HTTP API at /api/<x> and /api/v1/<x>
// (except /api/v1/query, which the Prometheus dialect owns and hands to
// handleQuery when the request is not PromQL).
func (s *Handler) Routes(r *mux.Router) {
	eps := []openTSDBEndpoint{
		{"put", []string{http.MethodPost}, s.writes.handlePut},
		{"query", []string{http.MethodGet, http.MethodPost, http.MethodDelete}, s.reads.handleQuery},
		{"query/last", []string{http.MethodGet, http.MethodPost}, s.reads.handleQueryLast},
		{"query/exp", nil, s.notImplemented},
		{"query/gexp", nil, s.notImplemented},
		{"suggest", []string{http.MethodGet, http.MethodPost}, s.reads.handleSuggest},
		{"search/lookup", []string{http.MethodGet, http.MethodPost}, s.reads.handleLookup},
		{"search/{type}", []string{http.MethodGet, http.MethodPost}, s.reads.handleSearch},
		{"uid/assign", []string{http.MethodGet, http.MethodPost}, s.uidAPI.handleUIDAssign},
		{"uid/uidmeta", []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}, s.uidAPI.handleUIDMeta},
		{"uid/tsmeta", []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}, s.uidAPI.handleTSMeta},
		{"uid/rename", []string{http.MethodGet, http.MethodPost}, s.uidAPI.handleUIDRename},
		{"annotation", []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}, s.notes.handleAnnotation},
		{"annotations", []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}, s.notes.handleAnnotation},
		{"annotation/bulk", []string{http.MethodPost, http.MethodPut, http.MethodDelete}, s.notes.handleAnnotationBulk},
		{"aggregators", []string{http.MethodGet, http.MethodPost}, s.info.handleAggregators},
		{"config", []string{http.MethodGet, http.MethodPost}, s.info.handleConfig},
		{"config/filters", []string{http.MethodGet, http.MethodPost}, s.info.handleConfigFilters},
		{"dropcaches", []string{http.MethodGet, http.MethodDelete}, s.info.handleDropCaches},
		{"stats", []string{http.MethodGet, http.MethodPost}, s.info.handleStats},
		{"stats/jvm", []string{http.MethodGet, http.MethodPost}, s.info.handleStatsRuntime},
		{"stats/query", []string{http.MethodGet, http.MethodPost}, s.info.handleStatsQuery},
		{"stats/region_clients", []string{http.MethodGet, http.MethodPost}, s.info.handleStatsRegionClients},
		{"stats/threads", []string{http.MethodGet, http.MethodPost}, s.info.handleStatsThreads},
		{"version", []string{http.MethodGet, http.MethodPost}, s.info.handleVersion},
		{"rollup", []string{http.MethodPost}, s.writes.handleRollup},
		{"histogram", []string{http.MethodPost}, s.writes.handleHistogram},
		{"tree", nil, s.notImplemented},
		{"tree/{sub}", nil, s.notImplemented},
	}
	for _, ep := range eps {
		name := strings.ReplaceAll(ep.path, "{type}", "other")
		name = strings.ReplaceAll(name, "{sub}", "other")
		h := ep.h
		if ep.methods != nil {
			h = Allow(h, ep.methods...)
		}
		h = s.host.Timed(name, s.openTSDBHTTP(h))
		r.HandleFunc("/api/"+ep.path, h)
		if ep.path != "query" {
			r.HandleFunc("/api/v1/"+ep.path, h)
		}
	}
}

// openTSDBHTTP wraps an OpenTSDB handler with what every endpoint of the
// dialect shares: CORS, ?method_override on a GET, ?jsonp and gzipped replies.
func (s *Handler) openTSDBHTTP(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.cors(w, r) {
			return
		}
		q := r.URL.Query()
		if r.Method == http.MethodGet && opentsdb.HasFlag(q, "method_override") {
			m := strings.ToUpper(q.Get("method_override"))
			switch m {
			case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
				r.Method = m
			case "":
				WriteError(w, http.StatusMethodNotAllowed, "Missing method override value", "")
				return
			default:
				WriteError(w, http.StatusMethodNotAllowed, "Unknown or unsupported method override value", "")
				return
			}
		}
		var jsonp string
		if fn, ok := q["jsonp"]; ok {
			if len(fn) > 0 {
				jsonp = fn[len(fn)-1]
			}
			if !validJSONP(jsonp) {
				WriteError(w, http.StatusBadRequest, "Invalid jsonp callback name: "+jsonp,
					"the name may hold letters, digits, '_', '$' and '.'")
				return
			}
		}
		// gzip next to the connection, jsonp inside it.
		if otsAcceptsGzip(r) {
			gw := &otsGzipWriter{ResponseWriter: w}
			defer gw.finish()
			w = gw
		}
		if jsonp != "" {
			jw := &otsJSONPWriter{ResponseWriter: w, fn: jsonp}
			defer jw.finish()
			w = jw
		}
		h(w, r)
	}
}

// corsAllowed reports whether CORS is on and the request's Origin may
// call the API.
func (s *Handler) corsAllowed(r *http.Request) (origin string, on, allowed bool) {
	domains := strings.TrimSpace(s.cfg.CORSDomains)
	origin = r.Header.Get("Origin")
	if domains == "" || origin == "" {
		return origin, false, false
	}
	for _, d := range strings.Split(domains, ",") {
		if d = strings.TrimSpace(d); d == "*" || strings.EqualFold(d, origin) {
			return origin, true, true
		}
	}
	return origin, true, false
}

// CORSHeaders sets the CORS headers of an allowed origin on a reply the
// server writes without the endpoint (an authentication refusal), so a
// browser shows the 401 or 403 rather than a CORS failure.
func (s *Handler) CORSHeaders(w http.ResponseWriter, r *http.Request) {
	if origin, _, allowed := s.corsAllowed(r); allowed {
		s.setCORS(w, origin)
	}
}

func (s *Handler) setCORS(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
	h.Set("Access-Control-Allow-Headers", s.cfg.CORSHeaders)
	h.Add("Vary", "Origin")
}

// cors applies the configured CORS policy, as OpenTSDB's RpcHandler does,
// and reports whether the request goes on to its handler.
func (s *Handler) cors(w http.ResponseWriter, r *http.Request) bool {
	origin, on, allowed := s.corsAllowed(r)
	if !on {
		return true
	}
	if !allowed {
		// OpenTSDB answers 200 with an error body.
		WriteError(w, http.StatusOK, "CORS domain not allowed", "The domain ["+origin+"] is not permitted access")
		return false
	}
	s.setCORS(w, origin)
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusOK)
		return false
	}
	return true
}

// Preflight answers a CORS preflight without running any endpoint, as the
// server does when authentication is on (a browser's preflight carries no
// credentials): the policy's headers and 200 for an allowed origin,
// OpenTSDB's 200 "CORS domain not allowed" for another, and 405 when CORS
// is off (-cors-domains ""), as OpenTSDB answers OPTIONS then.
func (s *Handler) Preflight(w http.ResponseWriter, r *http.Request) {
	if s.cors(w, r) {
		methodNotAllowed(w, r)
	}
}

func validJSONP(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '$' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// jsonpWriter wraps the body of a reply as fn(body).
type otsJSONPWriter struct {
	http.ResponseWriter
	fn       string
	started  bool // headers set
	prefixed bool // "fn(" written
}

func (j *otsJSONPWriter) start() {
	if !j.started {
		j.started = true
		j.Header().Set("Content-Type", "application/javascript; charset=UTF-8")
		j.Header().Del("Content-Length")
	}
}

func (j *otsJSONPWriter) WriteHeader(code int) {
	j.start()
	j.ResponseWriter.WriteHeader(code)
}

func (j *otsJSONPWriter) Write(b []byte) (int, error) {
	j.start()
	if !j.prefixed {
		j.prefixed = true
		if _, err := j.ResponseWriter.Write([]byte(j.fn + "(")); err != nil {
			return 0, err
		}
	}
	return j.ResponseWriter.Write(b)
}

func (j *otsJSONPWriter) finish() {
	if j.prefixed {
		_, _ = j.ResponseWriter.Write([]byte(")"))
	}
}

func (j *otsJSONPWriter) Flush() {
	if f, ok := j.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// acceptsGzip reports whether the client takes a gzipped reply.
func otsAcceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && q == 0 {
					return false
				}
			}
		}
		return true
	}
	return false
}

// otsGzipPool holds the writers of gzipped replies: klauspost/compress's
// gzip at its fastest level, which compresses an /api/query reply in about
// half the CPU of compress/gzip's (BenchmarkOpenTSDBQueryReply).
var otsGzipPool = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// gzipWriter gzips a reply that has a body; replies without one (204, 304,
// a status alone) go out as they are.
type otsGzipWriter struct {
	http.ResponseWriter
	code    int
	zw      *gzip.Writer
	started bool // headers written
}

func (g *otsGzipWriter) WriteHeader(code int) {
	if g.started || g.code != 0 {
		return
	}
	if code == http.StatusNoContent || code == http.StatusNotModified || code < 200 {
		g.started = true
		g.ResponseWriter.WriteHeader(code)
		return
	}
	g.code = code // written with the first byte of the body
}

func (g *otsGzipWriter) Write(b []byte) (int, error) {
	if !g.started {
		g.started = true
		h := g.Header()
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		h.Del("Content-Length")
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", http.DetectContentType(b))
		}
		if g.code == 0 {
			g.code = http.StatusOK
		}
		g.ResponseWriter.WriteHeader(g.code)
		g.zw = otsGzipPool.Get().(*gzip.Writer)
		g.zw.Reset(g.ResponseWriter)
	}
	if g.zw == nil {
		return g.ResponseWriter.Write(b)
	}
	return g.zw.Write(b)
}

func (g *otsGzipWriter) Flush() {
	if g.zw != nil {
		_ = g.zw.Flush()
	}
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (g *otsGzipWriter) finish() {
	if g.zw != nil {
		_ = g.zw.Close()
		g.zw.Reset(nil)
		otsGzipPool.Put(g.zw)
		g.zw = nil
		return
	}
	if !g.started && g.code != 0 {
		g.started = true
		g.ResponseWriter.WriteHeader(g.code)
	}
}

// notImplemented answers the OpenTSDB endpoints hourglass does not have.
func (s *Handler) notImplemented(w http.ResponseWriter, r *http.Request) {
	WriteError(w, http.StatusNotImplemented, "Not implemented by hourglass: "+r.URL.Path,
		"see docs/opentsdb-compatibility.md")
}

func goVersion() string { return runtime.Version() }

// statsLines are hourglass's own figures as OpenTSDB's telnet stats prints them.
func (s *info) statsLines(now time.Time) []string {
	var out []string
	for _, st := range s.stats(now) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %d %s", st.metric, st.ts, st.value)
		for _, t := range st.tags {
			b.WriteString(" " + t.Key + "=" + t.Value)
		}
		out = append(out, b.String())
	}
	return out
}

// QueryHandler is /api/query as OpenTSDB serves it, for the route the
// Prometheus dialect shares (/api/v1/query without a PromQL query).
func (s *Handler) QueryHandler() http.HandlerFunc {
	return s.openTSDBHTTP(Allow(s.reads.handleQuery, http.MethodGet, http.MethodPost, http.MethodDelete))
}
