package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// EmptyAnswer is one answer with no series, as EmptyLog records it: enough
// to send the same request again and to judge the answer against the data
// written by then.
type EmptyAnswer struct {
	// Phase is the soak's phase (measure, soak), when set.
	Phase   string `json:"phase,omitempty"`
	Dialect string `json:"dialect"`
	Kind    string `json:"kind"`
	// Sent is when the request was sent; Millis how long the answer took.
	Sent   time.Time `json:"sent"`
	Millis float64   `json:"ms"`
	// NewestSentMs is the newest timestamp the writer had sent when the
	// query was (Unix ms; 0 when unknown): the live edge of the data.
	NewestSentMs int64 `json:"newest_sent_ms,omitempty"`
	// Start and End are the query's range, Unix ms.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Method, Path and Body are the request; for PromQL the query string
	// is in Path.
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   string `json:"body,omitempty"`
	Status int    `json:"status"`
	// Answer is the server's answer, cut at maxLoggedAnswer bytes.
	Answer string `json:"answer"`
}

const maxLoggedAnswer = 4096

// EmptyLog writes every answer with no series as a JSON line (EmptyAnswer),
// the first Max of them (default 500); Dropped counts the rest. Safe for
// concurrent use; a nil *EmptyLog records nothing.
type EmptyLog struct {
	W   io.Writer
	Max int
	// Newest, if set, is the writer's newest timestamp sent (see
	// WriteConfig.Newest), recorded with each answer.
	Newest *atomic.Int64
	// Phase goes into each record.
	Phase string

	mu      sync.Mutex
	n       int
	Dropped int64
	err     error
}

func (l *EmptyLog) newest() int64 {
	if l == nil || l.Newest == nil {
		return 0
	}
	return l.Newest.Load()
}

func (l *EmptyLog) record(a EmptyAnswer) {
	if l == nil || l.W == nil {
		return
	}
	a.Phase = l.Phase
	if len(a.Answer) > maxLoggedAnswer {
		a.Answer = a.Answer[:maxLoggedAnswer]
	}
	line, err := json.Marshal(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	limit := l.Max
	if limit <= 0 {
		limit = 500
	}
	if l.n >= limit {
		l.Dropped++
		return
	}
	if err == nil {
		_, err = l.W.Write(append(line, '\n'))
	}
	if err != nil && l.err == nil {
		l.err = err
	}
	l.n++
}

// Recorded is the number of answers written, and the first write error.
func (l *EmptyLog) Recorded() (int, error) {
	if l == nil {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, l.err
}

// ReplayEmpty sends each answer recorded in an EmptyLog's file (in) to
// base again and writes a line per answer to out: what was asked and
// when, the series of the answer now; for an OpenTSDB sub-query with a
// rate also the same without the rate (its series and the times of its
// buckets in the range: a rate needs two, and gives none at the first),
// and PromQL's query of the same kind over the same range and step
// (MakeQuery's, for the rate kind). Sent after the writes are done, the
// answers tell an answer that was empty because its data was not yet
// written from one that is empty with all of it.
func ReplayEmpty(ctx context.Context, base string, in io.Reader, out io.Writer) error {
	client := &http.Client{Timeout: 2 * time.Minute}
	dec := json.NewDecoder(in)
	hm := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05.000") }
	for n := 1; ; n++ {
		var a EmptyAnswer
		if err := dec.Decode(&a); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
		line := fmt.Sprintf("%s %s %s sent %s range %s..%s", a.Phase, a.Dialect, a.Kind, a.Sent.UTC().Format("15:04:05.000"), hm(a.Start), hm(a.End))
		if a.NewestSentMs != 0 {
			line += " newest " + hm(a.NewestSentMs)
		}
		q := Query{Start: a.Start, End: a.End, OpenTSDB: []byte(a.Body)}
		dialect := a.Dialect
		if dialect == QueryProm {
			u, err := url.Parse(a.Path)
			if err != nil {
				return fmt.Errorf("record %d: %w", n, err)
			}
			v := u.Query()
			step, _ := strconv.ParseFloat(v.Get("step"), 64)
			q.PromQL, q.Step = v.Get("query"), time.Duration(step*float64(time.Second))
		}
		again, err := replayOnce(ctx, client, dialect, base, q)
		if err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
		line += fmt.Sprintf(" | now %d series", len(again))
		var body struct {
			Start, End int64
			Queries    []map[string]any
		}
		if dialect == QueryOpenTSDB && json.Unmarshal([]byte(a.Body), &body) == nil && len(body.Queries) == 1 && body.Queries[0]["rate"] == true {
			sub := body.Queries[0]
			metric, _ := sub["metric"].(string)
			delete(sub, "rate")
			delete(sub, "rateOptions")
			noRate, err := json.Marshal(body)
			if err != nil {
				return err
			}
			ss, err := replayOnce(ctx, client, dialect, base, Query{OpenTSDB: noRate})
			if err != nil {
				return fmt.Errorf("record %d without the rate: %w", n, err)
			}
			var times []int64
			for _, s := range ss {
				for _, t := range s {
					if !slices.Contains(times, t) {
						times = append(times, t)
					}
				}
			}
			slices.Sort(times)
			var ts []string
			for _, t := range times {
				ts = append(ts, hm(t))
			}
			line += fmt.Sprintf("; without the rate %d series, buckets at %v", len(ss), ts)
			ds, _ := sub["downsample"].(string)
			if step, err := time.ParseDuration(strings.SplitN(ds, "-", 2)[0]); err == nil && a.Kind == KindRate {
				pq := Query{Start: a.Start, End: a.End, Step: step, PromQL: fmt.Sprintf(`sum by (service) (rate(%s[5m]))`, metric)}
				ps, err := replayOnce(ctx, client, QueryProm, base, pq)
				if err != nil {
					return fmt.Errorf("record %d in PromQL: %w", n, err)
				}
				line += fmt.Sprintf("; PromQL %s: %d series", pq.PromQL, len(ps))
			}
		}
		if _, err := fmt.Fprintln(out, line); err != nil {
			return err
		}
	}
}

// replayOnce sends q and returns, per series of the answer, the times of
// its points (Unix ms).
func replayOnce(ctx context.Context, client *http.Client, dialect, base string, q Query) ([][]int64, error) {
	req, _, _, err := q.request(ctx, dialect, base)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp, b)
	}
	var out [][]int64
	if dialect == QueryProm {
		var a struct {
			Data struct{ Result []PromSeries }
		}
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, err
		}
		for _, s := range a.Data.Result {
			var ts []int64
			for _, v := range s.Values {
				if f, ok := v[0].(float64); ok {
					ts = append(ts, int64(math.Round(f*1000)))
				}
			}
			out = append(out, ts)
		}
		return out, nil
	}
	var a []OpenTSDBSeries
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	for _, s := range a {
		var ts []int64
		for k := range s.DPS {
			t, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				return nil, err
			}
			if t < 1e11 { // seconds
				t *= 1000
			}
			ts = append(ts, t)
		}
		out = append(out, ts)
	}
	return out, nil
}
