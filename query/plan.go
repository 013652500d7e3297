package query

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"hourglass/internal/errclass"
	"hourglass/model"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/uid"
)

// Names resolves names to UIDs and back (uid.Table).
type Names interface {
	GetID(ctx context.Context, dst []byte, k uid.Kind, name string) ([]byte, error)
	GetName(ctx context.Context, k uid.Kind, id []byte) (string, error)
}

// SeriesIndex selects and looks up series (series.Index).
type SeriesIndex interface {
	Select(metric string, matchers []series.Matcher, explicitTags bool, startMs, endMs int64) []*series.Entry
	Lookup(tsuid []byte) *series.Entry
}

// KeyWidths are the UID widths a TSUID is made of.
type KeyWidths struct{ Metric, TagK, TagV int }

// Planner turns a query by names (a metric, tag filters, or TSUIDs) into
// the series selection of a Request, as OpenTSDB plans it: names resolved
// (an unknown metric or tag key is an error), filters compiled by the
// caller, TSUIDs checked against the key widths, explicit tags applied.
// Both dialects plan here; the zero Planner is not usable.
type Planner struct {
	Names   Names
	Index   SeriesIndex
	Widths  KeyWidths
	MaxTags int // the most tag pairs a TSUID may hold
	// SkipUnresolvedTagVs makes a literal value that names no tag value
	// match nothing instead of failing the query (OpenTSDB's
	// tsd.query.skip_unresolved_tagvs).
	SkipUnresolvedTagVs bool
}

// Filter is one tag filter of a query, compiled.
type Filter struct {
	TagK    string
	Matcher series.Matcher
	GroupBy bool // the filter's key splits the result
	NotKey  bool // the series must not have the key (OpenTSDB's not_key)
	// Literals are the values a literal filter names, which must resolve
	// unless SkipUnresolvedTagVs; nil for other filters.
	Literals []string
}

// Selection is which series a query reads: by metric and filters, or by
// TSUIDs (hex, all of one metric).
type Selection struct {
	Metric       string
	Filters      []Filter
	ExplicitTags bool // series with exactly the filtered keys
	TSUIDs       []string
}

// PlanError is a query whose names or TSUIDs cannot be planned: invalid
// input, worded as OpenTSDB words it.
type PlanError struct {
	Message string
	Details string
}

func (e *PlanError) Error() string { return e.Message }

// Unwrap puts a PlanError in the invalid class.
func (e *PlanError) Unwrap() error { return errclass.ErrInvalid }

// Plan fills the selection of req (Metric, Matchers, GroupBy,
// ExplicitTags, Entries) from sel; req's range must be set.
func (p *Planner) Plan(ctx context.Context, req Request, sel Selection) (Request, error) {
	if len(sel.TSUIDs) > 0 {
		return p.planTSUIDs(ctx, req, sel.TSUIDs)
	}
	// An unknown metric is an error, as in OpenTSDB.
	if _, err := p.Names.GetID(ctx, nil, uid.Metric, sel.Metric); err != nil {
		return req, err
	}
	req.Metric = sel.Metric
	req.ExplicitTags = sel.ExplicitTags
	seen := map[string]bool{}
	notKey := false
	for _, f := range sel.Filters {
		if f.NotKey {
			notKey = true
		} else if err := p.checkNames(ctx, f); err != nil {
			return req, err
		}
		req.Matchers = append(req.Matchers, f.Matcher)
		if f.GroupBy && !seen[f.TagK] {
			seen[f.TagK] = true
			req.GroupBy = append(req.GroupBy, f.TagK)
		}
	}
	if req.ExplicitTags && notKey {
		// explicitTags means "exactly the filtered keys", and a not_key key
		// is one the series must not have: select without explicitTags and
		// compare the key sets here, leaving the not_key keys out.
		req.Entries = p.explicitEntries(req, sel.Filters)
		req.ExplicitTags = false
	}
	return req, nil
}

// checkNames answers as OpenTSDB does for names it cannot resolve: an
// unknown tag key is "No such name for 'tagk': 'x'", and so is an unknown
// literal value (unless SkipUnresolvedTagVs).
func (p *Planner) checkNames(ctx context.Context, f Filter) error {
	if _, err := p.Names.GetID(ctx, nil, uid.TagK, f.TagK); err != nil {
		return err
	}
	if p.SkipUnresolvedTagVs {
		return nil
	}
	for _, v := range f.Literals {
		if _, err := p.Names.GetID(ctx, nil, uid.TagV, v); err != nil {
			return err
		}
	}
	return nil
}

// explicitEntries selects the series of req whose tag keys are exactly the
// keys of the filters other than not_key.
func (p *Planner) explicitEntries(req Request, filters []Filter) []*series.Entry {
	keys := map[string]bool{}
	for _, f := range filters {
		if !f.NotKey {
			keys[f.TagK] = true
		}
	}
	from := req.Start - rowkey.HourMs
	if req.Downsample != nil {
		from -= req.Downsample.Interval
	}
	entries := p.Index.Select(req.Metric, req.Matchers, false, from, req.End)
	out := make([]*series.Entry, 0, len(entries))
	for _, e := range entries {
		n, ok := 0, true
		e.Labels.Range(func(k, _ string) bool {
			n++
			ok = keys[k]
			return ok
		})
		if ok && n == len(keys) {
			out = append(out, e)
		}
	}
	return out
}

// planTSUIDs fills req for a query by TSUIDs: the series named, all
// aggregated into one result, as OpenTSDB's TsdbQuery.setTimeSeries. They
// must share one metric.
func (p *Planner) planTSUIDs(ctx context.Context, req Request, tsuids []string) (Request, error) {
	mw := p.Widths.Metric
	var metricUID []byte
	req.Entries = []*series.Entry{}
	seen := map[string]bool{}
	for _, t := range tsuids {
		id, err := p.ParseTSUID(strings.TrimSpace(t))
		if err != nil {
			return req, err
		}
		if metricUID == nil {
			metricUID = id[:mw]
			name, err := p.Names.GetName(ctx, uid.Metric, metricUID)
			if err != nil {
				if errors.Is(err, uid.ErrNoSuchUID) {
					return req, NoSuchUID(uid.Metric, metricUID)
				}
				return req, err
			}
			req.Metric = name
		} else if string(id[:mw]) != string(metricUID) {
			return req, &PlanError{Message: "One or more TSUIDs did not share the same metric",
				Details: "first metric UID " + model.UIDHex(metricUID) + ", then " + model.UIDHex(id[:mw])}
		}
		if seen[string(id)] {
			continue
		}
		seen[string(id)] = true
		// A TSUID of no series has no data, as in OpenTSDB.
		if e := p.Index.Lookup(id); e != nil {
			req.Entries = append(req.Entries, e)
		}
	}
	return req, nil
}

// ParseTSUID decodes a hex TSUID (either case) and checks its shape against
// the key widths: a metric UID then whole tag pairs, at most MaxTags.
func (p *Planner) ParseTSUID(text string) ([]byte, error) {
	b, err := hex.DecodeString(text)
	w := p.Widths
	pair := w.TagK + w.TagV
	if err != nil || len(b) < w.Metric || (len(b)-w.Metric)%pair != 0 || (len(b)-w.Metric)/pair > p.MaxTags {
		return nil, &PlanError{Message: "Invalid TSUID: " + text,
			Details: fmt.Sprintf("a TSUID is hex: a %d-byte metric UID then at most %d pairs of %d-byte tag key and %d-byte tag value UIDs",
				w.Metric, p.MaxTags, w.TagK, w.TagV)}
	}
	return b, nil
}

// NoSuchUID is OpenTSDB's error for a UID that names nothing.
func NoSuchUID(kind uid.Kind, id []byte) error {
	names := map[uid.Kind]string{uid.Metric: "metrics", uid.TagK: "tagk", uid.TagV: "tagv"}
	return &PlanError{Message: fmt.Sprintf("No such unique ID for '%s': %s", names[kind], model.UIDHex(id))}
}
