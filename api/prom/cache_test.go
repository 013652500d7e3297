package prom

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// A decoder that remembers series decodes every body as one that
// remembers nothing: the same labels, metric, samples, counts, metadata and
// errors, whether the series are new to it, known from the same body or
// from an earlier one.
func FuzzDecodeCached(f *testing.F) {
	v1 := []*prompb.WriteRequest{
		{Timeseries: []prompb.TimeSeries{
			{Labels: awkward, Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}},
			{Labels: []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "x"}}, Samples: []prompb.Sample{{Timestamp: 2, Value: 2}}},
			{Labels: []prompb.Label{{Name: "job", Value: "x"}, {Name: "__name__", Value: "up"}}, Samples: []prompb.Sample{{Timestamp: 3, Value: 3}}},
			{Labels: []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "x"}}, Samples: []prompb.Sample{{Timestamp: 4, Value: 4}}},
			{Labels: []prompb.Label{{Name: "job", Value: "x"}}, Samples: []prompb.Sample{{Timestamp: 5, Value: 5}}},
		}},
	}
	for _, r := range v1 {
		b, err := r.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Add(rawV1(rawSeries([][2]string{{"__name__", "a"}, {"", "x"}}, 3), rawSeries([][2]string{{"__name__", "a"}}, 1), rawSeries([][2]string{{"__name__", "a"}}, 2)), false)
	// Labels with samples between them: the key is copied, not the body's.
	interleaved := func(job string) []byte {
		b := appendBytesField(nil, 1, rawLabel("job", job))
		b = append(b, rawSeries(nil, 2)...)
		b = appendBytesField(b, 1, rawLabel("__name__", "up"))
		b = append(b, rawSeries(nil, 1)...)
		return appendBytesField(b, 1, rawLabel("zone", "a"))
	}
	f.Add(rawV1(interleaved("x"), rawSeries([][2]string{{"job", "x"}, {"__name__", "up"}, {"zone", "a"}}, 1), interleaved("x"), interleaved("y")), false)
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "a.b c", "x", "✓\n"), nil),
			Samples:  []writev2.Sample{{Value: 1, Timestamp: 2}},
			Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: st.Symbolize("help"), UnitRef: st.Symbolize("s")}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "a.b c", "x", "✓\n"), nil), Samples: []writev2.Sample{{Value: 2, Timestamp: 3}}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("x", "y"), nil), Samples: []writev2.Sample{{Value: 2, Timestamp: 3}}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "n"), nil)},
	}}
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, true)
	f.Fuzz(func(t *testing.T, body []byte, v2 bool) {
		msg := MessageV1
		if v2 {
			msg = MessageV2
		}
		want, wantMeta, werr := collectWith(t, &Decoder{}, msg, body)
		cache := NewSeriesCache()
		for pass, d := range []*Decoder{{Cache: cache}, {Cache: cache}, {Cache: cache}} { // new series, then known ones
			got, gotMeta, err := collectWith(t, d, msg, body)
			if (err == nil) != (werr == nil) {
				t.Fatalf("pass %d: error %v, without the cache %v", pass, err, werr)
			}
			if err != nil {
				return
			}
			if !sameDecoded(got, want) || !reflect.DeepEqual(gotMeta, wantMeta) {
				t.Fatalf("pass %d: decoded\n%+v\nwithout the cache\n%+v", pass, got, want)
			}
		}
	})
}

// sameDecoded compares decoded series, errors by their text.
func sameDecoded(a, b []decoded) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if (x.err == nil) != (y.err == nil) || x.err != nil && x.err.Error() != y.err.Error() {
			return false
		}
		x.err, y.err = nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// The ref a caller attaches to a valid series comes back for the same
// labels sent again, in either message, and for no other series.
func TestSeriesRef(t *testing.T) {
	up := rawSeries([][2]string{{"__name__", "up"}, {"job", "x"}}, 1)
	other := rawSeries([][2]string{{"__name__", "up"}, {"job", "y"}}, 1)
	bad := rawSeries([][2]string{{"job", "x"}}, 1)
	d := Decoder{Cache: NewSeriesCache()}
	refs := func(body []byte, set bool) []any {
		var out []any
		err := d.Decode(MessageV1, body, func(s *Series) error {
			out = append(out, s.Ref())
			if set {
				s.SetRef("ref " + FormatLabels(s.Labels))
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := refs(rawV1(up, bad), true); got[0] != nil || got[1] != nil {
		t.Fatalf("refs before any SetRef: %v", got)
	}
	got := refs(rawV1(up, other, bad, up), false)
	want := []any{`ref {__name__="up", job="x"}`, nil, nil, `ref {__name__="up", job="x"}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("refs %q, want %q", got, want)
	}
	// A smaller MaxLabels forgets what was validated under the larger one.
	d.MaxLabels = 1
	if got := refs(rawV1(up), false); got[0] != nil {
		t.Fatalf("ref after MaxLabels changed: %v", got)
	}
}

// The cache stays within its bounds in entries and bytes.
func TestSeriesCacheBound(t *testing.T) {
	c := NewSeriesCache()
	lbls := []Label{{"__name__", "m"}}
	total := func() (n, bytes int) {
		for i := range c.shards {
			n += len(c.shards[i].m)
			bytes += c.shards[i].bytes
		}
		return n, bytes
	}
	last := ""
	for i := range 2*SeriesCacheMaxEntries + 10 {
		last = strings.Repeat("k", 200) + strconv.Itoa(i)
		c.put(last, 8, lbls, "m")
		if n, bytes := total(); n > SeriesCacheMaxEntries || bytes > SeriesCacheMaxBytes {
			t.Fatalf("after %d puts: %d entries, %d bytes", i+1, n, bytes)
		}
	}
	if n, _ := total(); n < 1000 {
		t.Fatalf("only %d entries kept", n)
	}
	if c.put(strings.Repeat("k", seriesCacheMaxKey+1), 8, lbls, "m") != nil {
		t.Fatal("a key over seriesCacheMaxKey was kept")
	}
	if e := c.get([]byte(last), 8); e == nil || e.metric != "m" {
		t.Fatal("the last key put is not found")
	}
	if e := c.get([]byte(last), 9); e != nil {
		t.Fatal("an entry validated under another MaxLabels was found")
	}
}

// A sized cache holds its own bounds, and counts the shards it emptied.
func TestSeriesCacheSized(t *testing.T) {
	c := NewSeriesCacheSized(64, 1<<20)
	lbls := []Label{{"__name__", "m"}}
	for i := range 1000 {
		c.put("series-"+strconv.Itoa(i), 8, lbls, "m")
		n := 0
		for j := range c.shards {
			n += len(c.shards[j].m)
		}
		if n > 64 {
			t.Fatalf("after %d puts: %d entries, over the 64 asked for", i+1, n)
		}
	}
	// 1000 series in 16 shards of 4: about 1000/4 emptyings.
	if r := c.Resets(); r < 200 {
		t.Fatalf("%d resets counted, want about 250", r)
	}
	if r := NewSeriesCache().Resets(); r != 0 {
		t.Fatalf("a new cache has %d resets", r)
	}
	// By bytes: 16 shards of 1 KiB hold a few 200-byte keys each.
	b := NewSeriesCacheSized(1<<20, 16<<10)
	for i := range 200 {
		b.put(strings.Repeat("k", 200)+strconv.Itoa(i), 8, lbls, "m")
	}
	for j := range b.shards {
		if b.shards[j].bytes > 1<<10 {
			t.Fatalf("shard %d holds %d bytes, over its 1 KiB", j, b.shards[j].bytes)
		}
	}
	if b.Resets() == 0 {
		t.Fatal("no reset counted when the bytes ran out")
	}
}

// A decoder tries the entry that followed the previous series last time
// before the map: it is used for the same key only, and never once its
// shard has forgotten it (a tiny cache, emptied all the time).
func TestSeriesCacheFollows(t *testing.T) {
	var series, keys [][]byte
	for i := range 6 {
		lbls := [][2]string{{"__name__", "m"}, {"i", strconv.Itoa(i)}}
		series = append(series, rawSeries(lbls, 1))
		keys = append(keys, rawSeries(lbls, 0)) // the label fields alone: the key
	}
	orders := [][]int{{0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}, {5, 0, 2, 1, 3, 4}, {0, 1, 2, 3, 4, 5}, {1, 0, 1, 0}}
	for _, c := range []*SeriesCache{NewSeriesCache(), NewSeriesCacheSized(16, 1<<20)} {
		d := &Decoder{Cache: c}
		for round, order := range orders {
			var parts [][]byte
			for _, i := range order {
				parts = append(parts, series[i])
			}
			body := rawV1(parts...)
			want, _, _ := collectWith(t, &Decoder{}, MessageV1, body)
			got, _, err := collectWith(t, d, MessageV1, body)
			if err != nil || !sameDecoded(got, want) {
				t.Fatalf("round %d: %v, %+v, want %+v", round, err, got, want)
			}
		}
		if c.Resets() > 0 {
			continue // entries come and go: nothing to say of next
		}
		a, b := c.get(keys[0], DefaultMaxLabels), c.get(keys[1], DefaultMaxLabels)
		if a == nil || b == nil || a.next.Load() != b {
			t.Fatalf("the entry of series 0 does not lead to series 1's: %v %v", a, b)
		}
	}
	// An entry forgotten by its shard is not predicted.
	c := NewSeriesCacheSized(64, 1<<20) // 4 entries a shard: series 0 and 1 fit whatever their shards
	d := &Decoder{Cache: c}
	body := rawV1(series[0], series[1])
	collectWith(t, d, MessageV1, body)
	collectWith(t, d, MessageV1, body)
	a, b := c.get(keys[0], DefaultMaxLabels), c.get(keys[1], DefaultMaxLabels)
	if a == nil || b == nil || a.next.Load() != b {
		t.Fatalf("the entry of series 0 does not lead to series 1's: %v %v", a, b)
	}
	for i := 0; !a.gone.Load() || !b.gone.Load(); i++ { // until both shards were emptied
		if i == 100_000 {
			t.Fatal("the shards of series 0 and 1 were never emptied")
		}
		c.put("other-"+strconv.Itoa(i), DefaultMaxLabels, []Label{{"__name__", "m"}}, "m")
	}
	if !a.gone.Load() || !b.gone.Load() || a.next.Load() != nil {
		t.Fatalf("forgotten entries: gone %v %v, next %v", a.gone.Load(), b.gone.Load(), a.next.Load())
	}
	a.next.Store(b) // as a decoder racing with the reset could leave it
	d.prev, d.MaxLabels = a, DefaultMaxLabels
	d.key = append(d.key[:0], keys[1]...)
	if e := d.lookup(); e == b {
		t.Fatal("a forgotten entry was predicted")
	}
}
