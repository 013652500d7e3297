package ingest

import (
	"errors"
	"fmt"
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

func BenchmarkBatchAdd(b *testing.B) {
	w := &Writer{limits: Limits{}.withDefaults()}
	const nSeries = 1000
	tags := make([][]series.Tag, nSeries)
	for i := range tags {
		tags[i] = []series.Tag{{Key: "host", Value: fmt.Sprintf("host-%04d", i)}, {Key: "region", Value: fmt.Sprintf("region-%d", i%4)},
			{Key: "dc", Value: fmt.Sprintf("dc-%d", i%12)}, {Key: "service", Value: fmt.Sprintf("svc-%d", i%8)}}
	}
	labels := make([]series.Labels, nSeries)
	b.Run("Add", func(b *testing.B) {
		batch := w.NewBatch()
		scratch := make([]series.Tag, 0, 4)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			batch.Reset()
			for s := range nSeries {
				scratch = append(scratch[:0], tags[s]...) // unsorted, as sent
				if err := batch.Add("sys.metric", scratch, int64(i+1), chunk.Int(int64(s))); err != nil {
					b.Fatal(err)
				}
				labels[s] = batch.LastLabels()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nSeries), "ns/point")
	})
	b.Run("AddLabels", func(b *testing.B) {
		batch := w.NewBatch()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			batch.Reset()
			for s := range nSeries {
				if err := batch.AddLabels(labels[s], int64(i+1), chunk.Int(int64(s))); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nSeries), "ns/point")
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

// TestAddKnown: a remembered series' point is queued with its labels and
// its hint, and its timestamp is still checked.
func TestAddKnown(t *testing.T) {
	w := &Writer{limits: Limits{}.withDefaults()}
	b := w.NewBatch()
	k := &Known{Labels: series.MakeLabels("m", []series.Tag{{Key: "a", Value: "1"}})}
	if err := b.AddKnown(k, 5, chunk.Int(5)); err != nil {
		t.Fatal(err)
	}
	if err := b.AddKnown(k, -1, chunk.Int(6)); err == nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("a timestamp before 1970: %v", err)
	}
	if len(b.samples) != 1 || b.samples[0] != (series.Sample{Labels: k.Labels, T: 5, V: chunk.Int(5), Hint: &k.Hint}) || b.Failed() != 1 {
		t.Fatalf("batch: samples %v, %d failed", b.samples, b.Failed())
	}
}
