package opentsdbhttp

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"hourglass/api/opentsdb"
	"hourglass/downsample"
	"hourglass/model"
)

// WriteJSON writes v as a reply with the code, or OpenTSDB's 500 if it does not serialize.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "Unable to serialize the reply: "+err.Error(), "")
		return
	}
	writeOTSRaw(w, code, b)
}

func writeOTSRaw(w http.ResponseWriter, code int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// handleAggregators is /api/aggregators: the names of every aggregator.
func (s *info) handleAggregators(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, downsample.Names())
}

// handleConfigFilters is /api/config/filters.
func (s *info) handleConfigFilters(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, opentsdb.FilterDescriptions())
}

// handleConfig is /api/config: the running configuration as a flat map of
// strings, sorted, in OpenTSDB's key names where one exists and hourglass.*
// ones for the rest.
func (s *info) handleConfig(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, s.configMap())
}

func (s *info) configMap() map[string]string {
	lim := s.writer.Limits()
	l, ql := s.layout(), s.engine.Limits()
	itoa := strconv.Itoa
	dur := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	port := ""
	{
		if a := s.host.Addr(); a != nil {
			if _, p, ok := strings.Cut(a.String(), "]:"); ok {
				port = p
			} else if i := strings.LastIndexByte(a.String(), ':'); i >= 0 {
				port = a.String()[i+1:]
			}
		}
	}
	return map[string]string{
		"tsd.network.port":                        port,
		"tsd.mode":                                "rw",
		"tsd.core.auto_create_metrics":            "true",
		"tsd.core.auto_create_tagks":              "true",
		"tsd.core.auto_create_tagvs":              "true",
		"tsd.core.enable_api":                     "true",
		"tsd.core.enable_ui":                      "false",
		"tsd.core.timezone":                       "UTC",
		"tsd.http.request.enable_chunked":         "true",
		"tsd.http.request.max_chunk":              strconv.FormatInt(s.cfg.MaxBodyBytes, 10),
		"tsd.http.request.cors_domains":           s.cfg.CORSDomains,
		"tsd.http.request.cors_headers":           s.cfg.CORSHeaders,
		"tsd.http.show_stack_trace":               "false",
		"tsd.http.query.allow_delete":             strconv.FormatBool(s.cfg.AllowDelete),
		"tsd.query.timeout":                       dur(s.cfg.QueryTimeout),
		"tsd.query.allow_simultaneous_duplicates": "true",
		"tsd.query.skip_unresolved_tagvs":         "false",
		"tsd.query.limits.data_points.default":    itoa(ql.MaxPoints),
		"tsd.storage.max_tags":                    itoa(lim.MaxTags),
		"tsd.storage.salt.buckets":                itoa(l.SaltBuckets),
		"tsd.storage.salt.width":                  "1",
		"tsd.storage.uid.width.metric":            itoa(s.uids.Width(model.KindMetric)),
		"tsd.storage.uid.width.tagk":              itoa(s.uids.Width(model.KindTagK)),
		"tsd.storage.uid.width.tagv":              itoa(s.uids.Width(model.KindTagV)),
		"tsd.storage.fix_duplicates":              "true",
		"tsd.core.socket.timeout":                 "0",
		"hourglass.version":                       s.cfg.Version,
		"hourglass.max_name_len":                  itoa(lim.MaxNameLen),
		"hourglass.max_body_bytes":                strconv.FormatInt(s.cfg.MaxBodyBytes, 10),
		"hourglass.max_decoded_bytes":             strconv.FormatInt(s.cfg.MaxDecodedBytes, 10),
		"hourglass.put_stream_bytes":              strconv.FormatInt(s.cfg.PutStreamBytes, 10),
		"hourglass.put_max_bytes":                 strconv.FormatInt(s.cfg.PutMaxBytes, 10),
		"hourglass.telnet_max_line":               itoa(s.cfg.TelnetMaxLine),
		"hourglass.query.max_series":              itoa(ql.MaxSeries),
		"hourglass.query.max_points":              itoa(ql.MaxPoints),
		"hourglass.query.timeout_ms":              dur(s.cfg.QueryTimeout),
		"hourglass.lookup.max_results":            itoa(s.cfg.LookupMaxResults),
		"hourglass.suggest.max_results":           itoa(s.cfg.SuggestMaxResults),
		"hourglass.annotations.max_results":       itoa(s.cfg.MaxAnnotations),
	}
}

// handleVersion is /api/version: OpenTSDB's fields, all strings, from the
// build's own information.
func (s *info) handleVersion(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, s.host.VersionInfo())
}

// Hostname is the host tag of hourglass's own figures ("localhost" if unknown).
func Hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// handleDropCaches is /api/dropcaches.
func (s *info) handleDropCaches(w http.ResponseWriter, r *http.Request) {
	s.uids.DropCaches()
	WriteJSON(w, http.StatusOK, map[string]string{"message": "Caches dropped", "status": "200"})
}

// statPoint is one figure of /api/stats and the telnet stats command.
type statPoint struct {
	metric string
	ts     int64
	value  string
	tags   []opentsdb.Tag
}

// stats returns hourglass's figures in OpenTSDB's stats shape: the head's
// and every metric of the /metrics registry (counters and gauges as they
// are, histograms and summaries as _count and _sum), each tagged with the
// host and its own labels.
func (s *info) stats(now time.Time) []statPoint {
	ts := now.Unix()
	host := opentsdb.Tag{Key: "host", Value: Hostname()}
	st := s.head.Stats()
	out := []statPoint{
		{"tsd.uptime", ts, strconv.FormatInt(int64(now.Sub(s.started).Seconds()), 10), []opentsdb.Tag{host}},
		{"hourglass.head.series", ts, strconv.Itoa(st.Series), []opentsdb.Tag{host}},
		{"hourglass.index.series", ts, strconv.Itoa(st.IndexSeries), []opentsdb.Tag{host}},
		{"hourglass.head.points", ts, strconv.Itoa(st.PointsInHead), []opentsdb.Tag{host}},
		{"hourglass.wal.bytes", ts, strconv.FormatInt(st.WALBytes, 10), []opentsdb.Tag{host}},
	}
	if s.reg == nil {
		return out
	}
	fams, err := s.reg.Gather()
	if err != nil {
		s.log.Warn("gathering metrics for /api/stats", "err", err)
	}
	num := func(f float64) string {
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			return strconv.FormatInt(int64(f), 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	for _, fam := range fams {
		name := strings.ReplaceAll(fam.GetName(), "_", ".")
		for _, m := range fam.GetMetric() {
			tags := []opentsdb.Tag{host}
			for _, lp := range m.GetLabel() {
				if v := lp.GetValue(); v != "" {
					tags = append(tags, opentsdb.Tag{Key: lp.GetName(), Value: v})
				}
			}
			switch {
			case m.Counter != nil:
				out = append(out, statPoint{name, ts, num(m.GetCounter().GetValue()), tags})
			case m.Gauge != nil:
				out = append(out, statPoint{name, ts, num(m.GetGauge().GetValue()), tags})
			case m.Untyped != nil:
				out = append(out, statPoint{name, ts, num(m.GetUntyped().GetValue()), tags})
			case m.Histogram != nil:
				out = append(out, statPoint{name + ".count", ts, strconv.FormatUint(m.GetHistogram().GetSampleCount(), 10), tags},
					statPoint{name + ".sum", ts, num(m.GetHistogram().GetSampleSum()), tags})
			case m.Summary != nil:
				out = append(out, statPoint{name + ".count", ts, strconv.FormatUint(m.GetSummary().GetSampleCount(), 10), tags},
					statPoint{name + ".sum", ts, num(m.GetSummary().GetSampleSum()), tags})
			}
		}
	}
	return out
}

// handleStats is /api/stats: [{"metric","timestamp","value","tags"}], the
// value a string as OpenTSDB writes it.
func (s *info) handleStats(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, st := range s.stats(time.Now()) {
		if i > 0 {
			b.WriteByte(',')
		}
		tags := map[string]string{}
		for _, t := range st.tags {
			tags[t.Key] = t.Value
		}
		e, _ := json.Marshal(struct {
			Metric    string            `json:"metric"`
			Timestamp int64             `json:"timestamp"`
			Value     string            `json:"value"`
			Tags      map[string]string `json:"tags"`
		}{st.metric, st.ts, st.value, tags})
		b.Write(e)
	}
	b.WriteByte(']')
	writeOTSRaw(w, http.StatusOK, b.Bytes())
}

// handleStatsRuntime is /api/stats/jvm: there is no JVM, so it reports the
// Go runtime under OpenTSDB's top-level keys.
func (s *info) handleStatsRuntime(w http.ResponseWriter, r *http.Request) {
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	now := time.Now()
	WriteJSON(w, http.StatusOK, map[string]any{
		"os": map[string]any{"name": runtime.GOOS, "arch": runtime.GOARCH, "availableProcessors": runtime.NumCPU()},
		"runtime": map[string]any{
			"name": "go", "version": runtime.Version(), "startTime": s.started.UnixMilli(),
			"uptime": now.Sub(s.started).Milliseconds(), "goroutines": runtime.NumGoroutine(),
			"gomaxprocs": runtime.GOMAXPROCS(0),
		},
		"memory": map[string]any{
			"heapMemoryUsage": map[string]uint64{"used": mem.HeapAlloc, "committed": mem.HeapSys, "released": mem.HeapReleased},
			"sys":             mem.Sys, "totalAlloc": mem.TotalAlloc, "mallocs": mem.Mallocs, "frees": mem.Frees,
			"stackInuse": mem.StackInuse,
		},
		"gc": map[string]any{
			"go": map[string]any{"collectionCount": mem.NumGC, "collectionTimeNs": mem.PauseTotalNs,
				"lastGCMs": int64(mem.LastGC / 1e6), "nextGCBytes": mem.NextGC},
		},
		"pools": map[string]any{},
	})
}

// handleStatsRegionClients is /api/stats/region_clients: hourglass has no
// HBase region clients, so the list is empty.
func (s *info) handleStatsRegionClients(w http.ResponseWriter, r *http.Request) {
	writeOTSRaw(w, http.StatusOK, []byte("[]"))
}

// maxStackDump bounds the goroutine dump of /api/stats/threads.
const maxStackDump = 16 << 20

// handleStatsThreads is /api/stats/threads: the goroutines, in OpenTSDB's
// thread shape (threadID, name, state, stack).
func (s *info) handleStatsThreads(w http.ResponseWriter, r *http.Request) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= maxStackDump {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	type thread struct {
		ThreadID    int64    `json:"threadID"`
		Priority    int      `json:"priority"`
		Name        string   `json:"name"`
		Interrupted bool     `json:"interrupted"`
		State       string   `json:"state"`
		Stack       []string `json:"stack"`
	}
	threads := []thread{}
	for _, block := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		// "goroutine 12 [chan receive, 3 minutes]:"
		head, ok := strings.CutPrefix(lines[0], "goroutine ")
		if !ok {
			continue
		}
		idText, rest, _ := strings.Cut(head, " ")
		id, _ := strconv.ParseInt(idText, 10, 64)
		state := strings.TrimSuffix(strings.TrimPrefix(rest, "["), "]:")
		t := thread{ThreadID: id, Priority: 5, Name: "goroutine " + idText, State: state, Stack: []string{}}
		for i := 1; i+1 < len(lines); i += 2 {
			t.Stack = append(t.Stack, strings.TrimSpace(lines[i])+" "+strings.TrimSpace(lines[i+1]))
		}
		threads = append(threads, t)
	}
	sort.Slice(threads, func(i, j int) bool { return threads[i].ThreadID < threads[j].ThreadID })
	WriteJSON(w, http.StatusOK, threads)
}

// handleSearch answers /api/search/<type> other than lookup: OpenTSDB needs
// a search plugin for them and without one answers "Searching is not
// enabled"; hourglass has none.
func (s *reads) handleSearch(w http.ResponseWriter, r *http.Request) {
	switch strings.ToLower(mux.Vars(r)["type"]) {
	case "tsmeta", "tsmeta_summary", "tsuids", "uidmeta", "annotation":
		WriteError(w, http.StatusBadRequest, "Searching is not enabled",
			"hourglass has no search plugin; /api/search/lookup works from the series index")
	default:
		WriteError(w, http.StatusBadRequest, "Invalid search query type supplied", "")
	}
}
