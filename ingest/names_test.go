package ingest

import (
	"errors"
	"strings"
	"testing"

	"hourglass/api/opentsdb"
	"hourglass/chunk"
	"hourglass/series"
)

func TestNameRules(t *testing.T) {
	for _, c := range []struct {
		name string
		want string // OpenTSDBNames' answer
	}{
		{"sys.cpu.user", ""},
		{"a-b_c/d:e", ""},
		{"héllo", ""},
		{"a b", "illegal character:  "},
		{"a!", "illegal character: !"},
		{"a\x00", "illegal character: \x00"},
		{"a\xff", "illegal character: \uFFFD"},
		{"a€", "illegal character: €"},
	} {
		if got := OpenTSDBNames.Check(c.name); got != c.want {
			t.Errorf("OpenTSDBNames.Check(%q) = %q, want %q", c.name, got, c.want)
		}
		if got := AnyNames.Check(c.name); got != "" {
			t.Errorf("AnyNames.Check(%q) = %q", c.name, got)
		}
	}
}

// TestBatchNameRule: a batch with the OpenTSDB rule refuses a point whose
// tag value has a character OpenTSDB refuses, as ErrInvalid, and takes it
// without the rule.
func TestBatchNameRule(t *testing.T) {
	w := NewWriter(nil, Limits{})
	b := w.NewBatch()
	tags := []series.Tag{{Key: "host", Value: "a b"}}
	if err := b.Add("m", tags, 1000, chunk.Int(1)); err != nil {
		t.Fatalf("without a rule: %v", err)
	}
	b.SetNameRule(OpenTSDBNames)
	b.Reset()
	err := b.Add("m", tags, 1000, chunk.Int(1))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "illegal character") {
		t.Fatalf("with the OpenTSDB rule: %v", err)
	}
	if err := b.Add("sys.cpu", []series.Tag{{Key: "host", Value: "web-01"}}, 1000, chunk.Int(1)); err != nil {
		t.Fatalf("a valid point: %v", err)
	}
}

// FuzzOpenTSDBNames: the rule in ingest accepts exactly the names the
// OpenTSDB parser's rule (api/opentsdb.ValidateName) accepts, for names
// within the length limit.
func FuzzOpenTSDBNames(f *testing.F) {
	for _, s := range []string{"sys.cpu", "a b", "héllo", "a\xff", "x:y/z-_", "€", "ǅ", "a\u0300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || len(s) > 256 {
			return
		}
		ours := OpenTSDBNames.Check(s) == ""
		theirs := opentsdb.ValidateName("metric", s, 256) == nil
		if ours != theirs {
			t.Fatalf("%q: ingest says %v, api/opentsdb says %v", s, ours, theirs)
		}
	})
}
