package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"
)

// point is a point as the tests write and read it.
type point struct {
	metric string
	tags   map[string]string
	ts     int64 // ms
	value  any   // int64 or float64
}

func (p point) seriesKey() string {
	keys := make([]string, 0, len(p.tags))
	for k := range p.tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(p.metric)
	for _, k := range keys {
		b.WriteString("," + k + "=" + p.tags[k])
	}
	return b.String()
}

// jsonValue renders a value as a client would send it, floats exactly.
func jsonValue(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0" // keep it a float on the wire
		}
		return s
	}
	panic(fmt.Sprintf("unexpected value %T", v))
}

func putBody(pts []point) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(',')
		}
		tags, _ := json.Marshal(p.tags)
		fmt.Fprintf(&b, `{"metric":%q,"timestamp":%d,"value":%s,"tags":%s}`, p.metric, p.ts, jsonValue(p.value), tags)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// put writes points over HTTP and fails the test unless all are acknowledged.
func (s *server) put(pts []point) {
	s.t.Helper()
	code, body := s.do("POST", "/api/put?details", "application/json", putBody(pts))
	if code != 200 {
		s.t.Fatalf("put: %d %s", code, body)
	}
}

// telnetPut writes points over the line protocol, then asks for the version
// so that it knows the server has read (and stored) every line before.
func (s *server) telnetPut(pts []point) {
	s.t.Helper()
	c, err := net.DialTimeout("tcp", s.addr, 10*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	var b bytes.Buffer
	for _, p := range pts {
		fmt.Fprintf(&b, "put %s %d %s", p.metric, p.ts, jsonValue(p.value))
		keys := make([]string, 0, len(p.tags))
		for k := range p.tags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%s", k, p.tags[k])
		}
		b.WriteString("\n")
	}
	b.WriteString("version\n")
	if _, err := c.Write(b.Bytes()); err != nil {
		s.t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 4096)
	var got []byte
	for !bytes.Contains(got, []byte("hourglass")) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			s.t.Fatalf("telnet: %v after %q", err, got)
		}
	}
	if bytes.HasPrefix(got, []byte("put:")) {
		s.t.Fatalf("telnet put errors: %s", got)
	}
}

type queryResult struct {
	Metric        string            `json:"metric"`
	Tags          map[string]string `json:"tags"`
	AggregateTags []string          `json:"aggregateTags"`
	DPS           [][2]json.Number  `json:"dps"`
}

// raw reads every series of metric in [start, end] (ms) with the none
// aggregator, in ms resolution, as arrays.
func (s *server) raw(metric string, start, end int64) map[string][][2]json.Number {
	s.t.Helper()
	body := fmt.Sprintf(`{"start":%d,"end":%d,"msResolution":true,"queries":[{"aggregator":"none","metric":%q}]}`, start, end, metric)
	code, resp := s.do("POST", "/api/query?arrays", "application/json", []byte(body))
	if code != 200 {
		s.t.Fatalf("query: %d %s", code, resp)
	}
	var rs []queryResult
	dec := json.NewDecoder(bytes.NewReader(resp))
	dec.UseNumber()
	if err := dec.Decode(&rs); err != nil {
		s.t.Fatalf("query response %s: %v", resp, err)
	}
	out := map[string][][2]json.Number{}
	for _, r := range rs {
		key := point{metric: r.Metric, tags: r.Tags}.seriesKey()
		if _, dup := out[key]; dup {
			s.t.Fatalf("series %s appears twice", key)
		}
		out[key] = r.DPS
	}
	return out
}

// sameValue reports whether a returned JSON number is exactly the value written.
func sameValue(n json.Number, v any) bool {
	switch x := v.(type) {
	case int64:
		return string(n) == strconv.FormatInt(x, 10)
	case float64:
		f, err := strconv.ParseFloat(string(n), 64)
		return err == nil && math.Float64bits(f) == math.Float64bits(x)
	}
	return false
}

// checkExact asserts that the server holds exactly want for metric.
func (s *server) checkExact(metric string, start, end int64, want []point) {
	s.t.Helper()
	got := s.raw(metric, start, end)
	bySeries := map[string][]point{}
	for _, p := range want {
		bySeries[p.seriesKey()] = append(bySeries[p.seriesKey()], p)
	}
	if len(got) != len(bySeries) {
		s.t.Fatalf("got %d series, want %d", len(got), len(bySeries))
	}
	for key, pts := range bySeries {
		sort.Slice(pts, func(i, j int) bool { return pts[i].ts < pts[j].ts })
		dps := got[key]
		if len(dps) != len(pts) {
			s.t.Fatalf("%s: got %d points, want %d", key, len(dps), len(pts))
		}
		for i, p := range pts {
			if string(dps[i][0]) != strconv.FormatInt(p.ts, 10) || !sameValue(dps[i][1], p.value) {
				s.t.Fatalf("%s point %d: got %s=%s, want %d=%s", key, i, dps[i][0], dps[i][1], p.ts, jsonValue(p.value))
			}
		}
	}
}
