package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The helpers of TestBigtableFresh: they run on goroutines of their own,
// so they return errors instead of failing the test (tryDo, harness_test.go).

// acked is a point a node acknowledged, and when.
type acked struct {
	node  int // the index of the node that took it
	host  string
	ts    int64
	value int64
	at    time.Time
}

func (a acked) point() point {
	return point{metric: "fresh_load", tags: map[string]string{"node": fmt.Sprintf("n%d", a.node), "host": a.host}, ts: a.ts, value: a.value}
}

// otsSees reports whether the OpenTSDB query of base returns the point.
func otsSees(base string, a acked) (bool, http.Header, error) {
	p := a.point()
	tags, _ := json.Marshal(p.tags)
	body := fmt.Sprintf(`{"start":%d,"end":%d,"msResolution":true,"queries":[{"aggregator":"none","metric":%q,"tags":%s}]}`,
		p.ts, p.ts+1, p.metric, tags)
	code, h, resp, err := tryDo("POST", base, "/api/query?arrays", "application/json", []byte(body))
	if err != nil || code != 200 {
		return false, h, fmt.Errorf("query: %d %.200s %v", code, resp, err)
	}
	var rs []queryResult
	dec := json.NewDecoder(bytes.NewReader(resp))
	dec.UseNumber()
	if err := dec.Decode(&rs); err != nil {
		return false, h, err
	}
	for _, r := range rs {
		for _, dp := range r.DPS {
			if string(dp[0]) == strconv.FormatInt(p.ts, 10) && sameValue(dp[1], p.value) {
				return true, h, nil
			}
		}
	}
	return false, h, nil
}

// promEnvelope is a Prometheus API reply.
type promEnvelope struct {
	Status   string          `json:"status"`
	Data     json.RawMessage `json:"data"`
	Warnings []string        `json:"warnings"`
	Error    string          `json:"error"`
}

// promInstantValues runs an instant query on base and returns its
// vector's values and the reply's warnings.
func promInstantValues(base, q string, ms int64) ([]string, []string, error) {
	form := url.Values{"query": {q}, "time": {promSeconds(ms)}}
	code, _, resp, err := tryDo("POST", base, "/api/v1/query", "application/x-www-form-urlencoded", []byte(form.Encode()))
	if err != nil {
		return nil, nil, err
	}
	var env promEnvelope
	if err := json.Unmarshal(resp, &env); err != nil || code != 200 || env.Status != "success" {
		return nil, nil, fmt.Errorf("%s: %d %.300s", q, code, resp)
	}
	var d struct {
		Result []struct {
			Value [2]json.RawMessage `json:"value"`
		} `json:"result"`
	}
	if err := json.Unmarshal(env.Data, &d); err != nil {
		return nil, nil, err
	}
	var vals []string
	for _, r := range d.Result {
		vals = append(vals, strings.Trim(string(r.Value[1]), `"`))
	}
	return vals, env.Warnings, nil
}

// promSees reports whether PromQL on base returns the point at its time.
func promSees(base string, a acked) (bool, error) {
	p := a.point()
	q := fmt.Sprintf(`fresh_load{node=%q,host=%q}`, p.tags["node"], p.tags["host"])
	vals, _, err := promInstantValues(base, q, p.ts)
	if err != nil {
		return false, err
	}
	return len(vals) == 1 && vals[0] == strconv.FormatInt(a.value, 10), nil
}

// delays gathers visibility delays.
type delays struct {
	mu  sync.Mutex
	all map[string][]time.Duration // by language
}

func (d *delays) add(lang string, v time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.all == nil {
		d.all = map[string][]time.Duration{}
	}
	d.all[lang] = append(d.all[lang], v)
}

// quantiles returns p50 and p99 of a language's delays ("" for all) and their count.
func (d *delays) quantiles(lang string) (p50, p99 time.Duration, n int) {
	d.mu.Lock()
	var vs []time.Duration
	for l, v := range d.all {
		if lang == "" || l == lang {
			vs = append(vs, v...)
		}
	}
	d.mu.Unlock()
	if len(vs) == 0 {
		return 0, 0, 0
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	q := func(f float64) time.Duration { return vs[min(len(vs)-1, int(f*float64(len(vs))))] }
	return q(0.50), q(0.99), len(vs)
}

var peersLiveRe = regexp.MustCompile(`(?m)^hourglass_peers_live (\d+)`)

// waitPeers waits until every node sees want live peers.
func waitPeers(t *testing.T, nodes []*server, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range nodes {
		for {
			_, _, b, err := tryDo("GET", s.url, "/metrics", "", nil)
			m := peersLiveRe.FindSubmatch(b)
			if err == nil && m != nil && string(m[1]) == strconv.Itoa(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not see %d live peers: %v %s", s.url, want, err, m)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitVisible polls until see is true and returns how long that took
// from since; it fails the test after limit.
func waitVisible(t *testing.T, what string, since time.Time, limit time.Duration, see func() (bool, error)) time.Duration {
	t.Helper()
	for {
		ok, err := see()
		if ok {
			return time.Since(since)
		}
		if time.Since(since) > limit {
			t.Fatalf("%s: not visible after %v (%v)", what, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
