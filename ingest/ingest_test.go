package ingest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"hourglass/chunk"
	"hourglass/series"
)

func TestAddRejectsWhatTheStorageCannotHold(t *testing.T) {
	w := &Writer{limits: Limits{MaxTags: 2, MaxNameLen: 8}.withDefaults()}
	cases := []struct {
		name   string
		metric string
		tags   []series.Tag
		ts     int64
		want   string // in the error; "" for accepted
	}{
		{"ok", "m", []series.Tag{{Key: "a", Value: "b"}}, 1, ""},
		{"last ms a row key holds", "m", []series.Tag{{Key: "a", Value: "b"}}, MaxTimestamp, ""},
		{"past 2106", "m", []series.Tag{{Key: "a", Value: "b"}}, MaxTimestamp + 1, "outside the range"},
		{"negative", "m", []series.Tag{{Key: "a", Value: "b"}}, -1, "outside the range"},
		{"empty metric", "", []series.Tag{{Key: "a", Value: "b"}}, 1, "empty metric"},
		{"long metric", "metric.too.long", nil, 1, "longer than the limit of 8"},
		{"too many tags", "m", []series.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}, {Key: "c", Value: "3"}}, 1, "3 tags, more than the limit of 2"},
		{"empty tag value", "m", []series.Tag{{Key: "a", Value: ""}}, 1, "empty key or value"},
		{"duplicate key", "m", []series.Tag{{Key: "a", Value: "1"}, {Key: "a", Value: "2"}}, 1, "duplicate tag key"},
		{"bad utf-8", "m\xff", nil, 1, "not valid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := w.NewBatch()
			err := b.Add(c.metric, c.tags, c.ts, chunk.Int(1))
			if c.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid with %q", err, c.want)
			}
			if b.Failed() != 1 || b.Errors()[0] != err {
				t.Fatalf("the batch does not record the rejection: %v", b.Errors())
			}
		})
	}
}

func TestCachedBatchAgreesWithUncached(t *testing.T) {
	w := &Writer{limits: Limits{MaxTags: 3, MaxNameLen: 8}.withDefaults()}
	type point struct {
		metric string
		tags   []series.Tag
		ts     int64
	}
	tag := func(kv ...string) []series.Tag {
		var out []series.Tag
		for i := 0; i < len(kv); i += 2 {
			out = append(out, series.Tag{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	points := []point{
		{"m", tag("b", "1", "a", "2"), 1},
		{"m", tag("a", "2", "b", "1"), 2}, // same series, sorted
		{"m", tag("b", "1", "a", "2"), 3}, // a hit
		{"m", tag("b", "1", "a", "2"), -1},
		{"m", tag("a", "1", "a", "2"), 4}, // duplicate key: not cached
		{"m", tag("a", "1", "a", "2"), 5},
		{"m", tag("a", "x\xff"), 6},
		{"m", tag("a", "x\xff"), 7},
		{"toolongname", tag("a", "1"), 8},
		{"toolongname", tag("a", "1"), 9},
		{"m", tag("a", "1", "b", "2", "c", "3", "d", "4"), 10},
		{"m", tag("a", "1", "b", "2", "c", "3", "d", "4"), 11},
		{"m", tag("ab", "1"), 12}, // no confusion between key and value bytes
		{"m", tag("a", "b1"), 13},
		{"m", nil, 14},
	}
	plain, cached := w.NewBatch(), w.NewCachedBatch()
	for round := range 3 {
		for _, p := range points {
			e1 := plain.Add(p.metric, append([]series.Tag(nil), p.tags...), p.ts, chunk.Int(1))
			e2 := cached.Add(p.metric, append([]series.Tag(nil), p.tags...), p.ts, chunk.Int(1))
			if fmt.Sprint(e1) != fmt.Sprint(e2) {
				t.Fatalf("round %d, %v: uncached %v, cached %v", round, p, e1, e2)
			}
		}
		if len(plain.samples) != len(cached.samples) {
			t.Fatalf("round %d: %d samples against %d", round, len(plain.samples), len(cached.samples))
		}
		for i := range plain.samples {
			if plain.samples[i] != cached.samples[i] || plain.pos[i] != cached.pos[i] {
				t.Fatalf("round %d, sample %d: %+v against %+v", round, i, plain.samples[i], cached.samples[i])
			}
		}
		plain.Reset()
		cached.Reset()
	}
	if n := len(cached.cache.m); n != 5 {
		t.Errorf("the cache holds %d entries, want 5 (two orders of one series, m{ab=1}, m{a=b1}, m{})", n)
	}
}

func TestLabelCacheBounded(t *testing.T) {
	w := &Writer{limits: Limits{}.withDefaults()}
	b := w.NewCachedBatch()
	for i := range 3 * labelCacheMaxEntries {
		if err := b.Add("m", []series.Tag{{Key: "id", Value: strconv.Itoa(i)}}, 1, chunk.Int(1)); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			b.Reset()
		}
		if len(b.cache.m) > labelCacheMaxEntries || b.cache.bytes > labelCacheMaxBytes {
			t.Fatalf("after %d series: %d entries, %d bytes", i+1, len(b.cache.m), b.cache.bytes)
		}
	}
}

func BenchmarkBatchAdd(b *testing.B) {
	w := &Writer{limits: Limits{}.withDefaults()}
	const nSeries = 1000
	tags := make([][]series.Tag, nSeries)
	for i := range tags {
		tags[i] = []series.Tag{{Key: "host", Value: fmt.Sprintf("host-%04d", i)}, {Key: "region", Value: fmt.Sprintf("region-%d", i%4)},
			{Key: "dc", Value: fmt.Sprintf("dc-%d", i%12)}, {Key: "service", Value: fmt.Sprintf("svc-%d", i%8)}}
	}
	for _, c := range []struct {
		name  string
		batch *Batch
	}{{"uncached", w.NewBatch()}, {"cached", w.NewCachedBatch()}} {
		b.Run(c.name, func(b *testing.B) {
			scratch := make([]series.Tag, 0, 4)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				c.batch.Reset()
				for s := range nSeries {
					scratch = append(scratch[:0], tags[s]...) // unsorted, as sent
					if err := c.batch.Add("sys.metric", scratch, int64(i+1), chunk.Int(int64(s))); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nSeries), "ns/point")
		})
	}
}

// FuzzCachedBatch checks that a cached batch accepts, rejects and names
// every point as an uncached one does, the second time it sees a series
// (a cache hit) as the first.
func FuzzCachedBatch(f *testing.F) {
	f.Add("m", "a=1,b=2", "m", "b=2,a=1")
	f.Add("m", "ab=1", "m", "a=b1")
	f.Add("m\xff", "a=1", "m", "a=1,a=2")
	f.Add("", "", "m", "=")
	w := &Writer{limits: Limits{MaxTags: 4, MaxNameLen: 16}.withDefaults()}
	parse := func(s string) []series.Tag {
		var out []series.Tag
		for _, kv := range strings.Split(s, ",") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			out = append(out, series.Tag{Key: k, Value: v})
		}
		return out
	}
	f.Fuzz(func(t *testing.T, m1, t1, m2, t2 string) {
		plain, cached := w.NewBatch(), w.NewCachedBatch()
		for round := range 2 {
			for _, p := range [][2]string{{m1, t1}, {m2, t2}, {m1, t1}} {
				e1 := plain.Add(p[0], parse(p[1]), 1, chunk.Int(1))
				e2 := cached.Add(p[0], parse(p[1]), 1, chunk.Int(1))
				if fmt.Sprint(e1) != fmt.Sprint(e2) {
					t.Fatalf("round %d, %q %q: uncached %v, cached %v", round, p[0], p[1], e1, e2)
				}
			}
			if len(plain.samples) != len(cached.samples) {
				t.Fatalf("%d samples against %d", len(plain.samples), len(cached.samples))
			}
			for i := range plain.samples {
				if plain.samples[i] != cached.samples[i] {
					t.Fatalf("sample %d: %q against %q", i, plain.samples[i].Labels, cached.samples[i].Labels)
				}
			}
			plain.Reset()
			cached.Reset()
		}
	})
}

func TestAddLabels(t *testing.T) {
	w := &Writer{limits: Limits{}.withDefaults()}
	b := w.NewBatch()
	if err := b.Add("m", []series.Tag{{Key: "b", Value: "2"}, {Key: "a", Value: "1"}}, 1, chunk.Int(1)); err != nil {
		t.Fatal(err)
	}
	l := b.LastLabels()
	if want := series.MakeLabels("m", []series.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}); l != want {
		t.Fatalf("LastLabels = %q, want %q", l, want)
	}
	if err := b.AddLabels(l, 2, chunk.Int(2)); err != nil {
		t.Fatal(err)
	}
	if err := b.AddLabels(l, -1, chunk.Int(3)); err == nil || !errors.Is(err, ErrInvalid) || b.LastLabels() != "" {
		t.Fatalf("a timestamp before 1970: %v, LastLabels %q", err, b.LastLabels())
	}
	if err := b.Add("", nil, 1, chunk.Int(1)); err == nil || b.LastLabels() != "" {
		t.Fatalf("a rejected point: %v, LastLabels %q", err, b.LastLabels())
	}
	if b.Len() != 4 || b.Failed() != 2 || len(b.samples) != 2 || b.samples[1] != (series.Sample{Labels: l, T: 2, V: chunk.Int(2)}) || b.pos[1] != 1 {
		t.Fatalf("batch: %d points, %d failed, samples %v at %v", b.Len(), b.Failed(), b.samples, b.pos)
	}
}
