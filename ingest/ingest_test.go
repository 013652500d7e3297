package ingest

import (
	"errors"
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
