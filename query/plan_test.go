package query

import (
	"context"
	"errors"
	"strings"
	"testing"

	"hourglass/internal/errclass"
	"hourglass/series"
	"hourglass/uid"
)

// fakeNames knows names by kind; a UID is the name's first byte repeated
// to the kind's width (widths 3, 3, 3 here).
type fakeNames map[uid.Kind]map[string]bool

func (f fakeNames) GetID(_ context.Context, _ []byte, k uid.Kind, name string) ([]byte, error) {
	if !f[k][name] {
		return nil, &uid.NoSuchNameError{Kind: k, Name: name}
	}
	return []byte{name[0], name[0], name[0]}, nil
}

func (f fakeNames) GetName(_ context.Context, k uid.Kind, id []byte) (string, error) {
	for n := range f[k] {
		if n[0] == id[0] {
			return n, nil
		}
	}
	return "", uid.ErrNoSuchUID
}

// fakeIndex holds entries by TSUID and selects by metric.
type fakeIndex struct{ entries []*series.Entry }

func (x *fakeIndex) Select(metric string, _ []series.Matcher, _ bool, _, _ int64) []*series.Entry {
	var out []*series.Entry
	for _, e := range x.entries {
		if e.Labels.Metric() == metric {
			out = append(out, e)
		}
	}
	return out
}

func (x *fakeIndex) Lookup(tsuid []byte) *series.Entry {
	for _, e := range x.entries {
		if string(e.TSUID) == string(tsuid) {
			return e
		}
	}
	return nil
}

type keyMatcher string

func (k keyMatcher) Key() string                         { return string(k) }
func (k keyMatcher) Matches(_ string, present bool) bool { return present }

func testPlanner() (*Planner, *fakeIndex) {
	names := fakeNames{
		uid.Metric: {"cpu": true, "mem": true},
		uid.TagK:   {"host": true, "dc": true},
		uid.TagV:   {"a": true},
	}
	ix := &fakeIndex{entries: []*series.Entry{
		{Labels: series.MakeLabels("cpu", []series.Tag{{Key: "host", Value: "a"}}), TSUID: []byte("ccchhha")},
		{Labels: series.MakeLabels("cpu", []series.Tag{{Key: "host", Value: "a"}, {Key: "dc", Value: "d"}}), TSUID: []byte("ccchhhadddd")},
	}}
	return &Planner{Names: names, Index: ix, Widths: KeyWidths{Metric: 3, TagK: 3, TagV: 1}, MaxTags: 2}, ix
}

// TestPlanNames: an unknown metric, tag key or literal value is an error of
// the invalid class unless SkipUnresolvedTagVs; group-by keys are listed once.
func TestPlanNames(t *testing.T) {
	p, _ := testPlanner()
	ctx := context.Background()
	if _, err := p.Plan(ctx, Request{}, Selection{Metric: "nope"}); !errclass.IsInvalid(err) {
		t.Fatalf("unknown metric: %v", err)
	}
	f := Filter{TagK: "host", Matcher: keyMatcher("host"), GroupBy: true, Literals: []string{"zz"}}
	if _, err := p.Plan(ctx, Request{}, Selection{Metric: "cpu", Filters: []Filter{f}}); !errclass.IsInvalid(err) {
		t.Fatalf("unknown literal value: %v", err)
	}
	p.SkipUnresolvedTagVs = true
	req, err := p.Plan(ctx, Request{}, Selection{Metric: "cpu", Filters: []Filter{f, f}})
	if err != nil || req.Metric != "cpu" || len(req.Matchers) != 2 || len(req.GroupBy) != 1 || req.Entries != nil {
		t.Fatalf("got %+v, %v", req, err)
	}
	bad := Filter{TagK: "nokey", Matcher: keyMatcher("nokey")}
	if _, err := p.Plan(ctx, Request{}, Selection{Metric: "cpu", Filters: []Filter{bad}}); !errclass.IsInvalid(err) {
		t.Fatalf("unknown tag key: %v", err)
	}
}

// TestPlanExplicitNotKey: explicit tags with a not_key filter select the
// series whose keys are exactly the other filters' keys.
func TestPlanExplicitNotKey(t *testing.T) {
	p, ix := testPlanner()
	req, err := p.Plan(context.Background(), Request{}, Selection{Metric: "cpu", ExplicitTags: true, Filters: []Filter{
		{TagK: "host", Matcher: keyMatcher("host")},
		{TagK: "dc", Matcher: keyMatcher("dc"), NotKey: true},
	}})
	if err != nil || req.ExplicitTags || len(req.Entries) != 1 || req.Entries[0] != ix.entries[0] {
		t.Fatalf("got %+v, %v", req, err)
	}
}

// TestPlanTSUIDs: TSUIDs are checked against the widths and the tag limit,
// must share a metric, are deduplicated, and an unknown one reads nothing.
func TestPlanTSUIDs(t *testing.T) {
	p, ix := testPlanner()
	ctx := context.Background()
	hexOf := func(s string) string {
		const d = "0123456789ABCDEF"
		var b strings.Builder
		for _, c := range []byte(s) {
			b.WriteByte(d[c>>4])
			b.WriteByte(d[c&15])
		}
		return b.String()
	}
	req, err := p.Plan(ctx, Request{}, Selection{TSUIDs: []string{hexOf("ccchhha"), hexOf("ccchhha"), hexOf("ccchhhb")}})
	if err != nil || req.Metric != "cpu" || len(req.Entries) != 1 || req.Entries[0] != ix.entries[0] {
		t.Fatalf("got %+v, %v", req, err)
	}
	var pe *PlanError
	for _, bad := range []string{"zz", hexOf("cc"), hexOf("ccchh"), hexOf("ccchhhahhhahhha")} {
		if _, err := p.Plan(ctx, Request{}, Selection{TSUIDs: []string{bad}}); !errors.As(err, &pe) || !strings.HasPrefix(pe.Message, "Invalid TSUID") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := p.Plan(ctx, Request{}, Selection{TSUIDs: []string{hexOf("ccchhha"), hexOf("mmmhhha")}}); !errors.As(err, &pe) || !strings.Contains(pe.Message, "same metric") {
		t.Errorf("mixed metrics: %v", err)
	}
	if _, err := p.Plan(ctx, Request{}, Selection{TSUIDs: []string{hexOf("xxxhhha")}}); !errors.As(err, &pe) || pe.Message != "No such unique ID for 'metrics': 787878" {
		t.Errorf("unknown metric UID: %v", err)
	}
}
