package opentsdbhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"hourglass/api/opentsdb"
)

// queryLog keeps the queries running and the last ones finished, for
// /api/stats/query. It is safe for concurrent use.
type queryLog struct {
	mu        sync.Mutex
	running   map[*runningQuery]struct{}
	completed []*runningQuery // ring, oldest first once full
	next      int
	size      int
}

type runningQuery struct {
	query     map[string]any // the request, copied when the query began
	remote    string
	headers   map[string]string
	started   time.Time
	completed time.Time
	code      int
	exception string
	sent      bool
	stats     []byte // the statsSummary, when the query succeeded
}

func newQueryLog(size int) *queryLog {
	if size <= 0 {
		size = 256
	}
	return &queryLog{running: map[*runningQuery]struct{}{}, size: size}
}

// begin records a query as running.
func (l *queryLog) begin(r *http.Request, q *opentsdb.QueryRequest) *runningQuery {
	h := map[string]string{}
	for k, v := range r.Header {
		val := strings.Join(v, ", ")
		if strings.EqualFold(k, "Cookie") || strings.EqualFold(k, "Authorization") {
			val = "*******"
		}
		h[k] = val
	}
	rq := &runningQuery{query: queryJSON(q), remote: r.RemoteAddr, headers: h, started: time.Now()}
	l.mu.Lock()
	l.running[rq] = struct{}{}
	l.mu.Unlock()
	return rq
}

// end moves a query to the finished ones.
func (l *queryLog) end(rq *runningQuery, code int, err error, stats []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rq.completed = time.Now()
	rq.code = code
	if err != nil {
		rq.exception = err.Error()
	}
	rq.sent = err == nil
	rq.stats = stats
	delete(l.running, rq)
	if len(l.completed) < l.size {
		l.completed = append(l.completed, rq)
		return
	}
	l.completed[l.next] = rq
	l.next = (l.next + 1) % l.size
}

// queryJSON is the request as /api/stats/query shows it.
func queryJSON(q *opentsdb.QueryRequest) map[string]any {
	sub := make([]json.RawMessage, len(q.Queries))
	for i := range q.Queries {
		sub[i] = q.Queries[i].AppendJSON(nil)
	}
	return map[string]any{
		"start": q.Start, "end": nilIfEmpty(q.End), "timezone": nilIfEmpty(q.Timezone),
		"queries": sub, "msResolution": q.MsResolution, "showTSUIDs": q.ShowTSUIDs,
		"showQuery": q.ShowQuery, "showStats": q.ShowStats, "showSummary": q.ShowSummary,
		"noAnnotations": q.NoAnnotations, "globalAnnotations": q.GlobalAnnotations,
		"delete": q.Delete, "useCalendar": q.UseCalendar,
	}
}

func (rq *runningQuery) json(running int, now time.Time) map[string]any {
	out := map[string]any{
		"query": rq.query, "remote": rq.remote, "user": nil, "requestHeaders": rq.headers,
		"queryStartTimestamp": rq.started.UnixMilli(), "numRunningQueries": running, "executed": 1,
	}
	if rq.completed.IsZero() {
		out["elapsed"] = float64(now.Sub(rq.started).Nanoseconds()) / 1e6
		return out
	}
	out["queryCompletedTimestamp"] = rq.completed.UnixMilli()
	out["httpResponse"] = map[string]any{"code": rq.code, "reasonPhrase": http.StatusText(rq.code)}
	out["sentToClient"] = rq.sent
	if rq.exception != "" {
		out["exception"] = rq.exception
	} else {
		out["exception"] = nil
	}
	if rq.stats != nil {
		out["stats"] = json.RawMessage(rq.stats)
	}
	return out
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// handleStatsQuery is /api/stats/query: {"running":[...],"completed":[...]},
// the completed ones newest first.
func (s *info) handleStatsQuery(w http.ResponseWriter, r *http.Request) {
	l := s.queries
	now := time.Now()
	l.mu.Lock()
	running := make([]map[string]any, 0, len(l.running))
	for rq := range l.running {
		running = append(running, rq.json(len(l.running), now))
	}
	completed := make([]map[string]any, 0, len(l.completed))
	for i := len(l.completed) - 1; i >= 0; i-- {
		rq := l.completed[(l.next+i)%len(l.completed)]
		completed = append(completed, rq.json(len(l.running), now))
	}
	l.mu.Unlock()
	WriteJSON(w, http.StatusOK, map[string]any{"running": running, "completed": completed})
}
