package opentsdbhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"hourglass/api/opentsdb"
	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/ingest"
	"hourglass/model"
	"hourglass/rollup"
)

// Rollups stores rollup points written from outside (/api/rollup, the
// telnet rollup command) beside the rollups hourglass computes
// (series.DB.WriteRollups).
type Rollups interface {
	// WriteRollups stores the samples; errs, of the same length, receives
	// each one's own error. A non-nil return means none may be
	// acknowledged.
	WriteRollups(ctx context.Context, samples []RollupSample, errs []error) error
}

// RollupSample is one rollup point, its series checked and named.
type RollupSample struct {
	Labels   model.Labels
	Interval time.Duration
	Agg      rollup.Aggregator
	T        int64 // ms
	V        chunk.Value
}

// AggregateTagKey is the tag a pre-aggregate carries, its value the
// groupByAggregator in upper case (OpenTSDB's tsd.rollups.agg_tag_key).
const AggregateTagKey = "_aggregate"

// rollupBatch is what one /api/rollup request or telnet line stores: the
// pre-aggregates of raw points go to the head as puts; the rollups to the
// rollup table. errs is each point's outcome, by point number.
type rollupBatch struct {
	s       *writes
	puts    *ingest.Batch // pre-aggregates of raw points
	putIdx  []int         // the point number of each point added to puts
	check   *ingest.Batch // names and limits of the rollups' series, never committed
	samples []RollupSample
	index   []int // each sample's point number
	tags    []model.Tag
	outcomes
}

func (s *writes) newRollupBatch() *rollupBatch {
	b := &rollupBatch{s: s, puts: s.writer.NewBatch(), check: s.writer.NewBatch()}
	b.puts.NewRequest()
	return b
}

// add takes point number i (rp nil: perr is its decoding error) and
// returns its error if it is refused now.
func (b *rollupBatch) add(i int, rp *opentsdb.RollupPoint, perr error) error {
	if perr == nil {
		perr = b.route(i, rp)
	}
	b.set(i, perr)
	return perr
}

func (b *rollupBatch) route(i int, rp *opentsdb.RollupPoint) error {
	b.tags = toSeriesTags(b.tags, rp.Tags)
	if rp.GroupBy != "" {
		if _, err := downsample.Lookup(strings.ToLower(rp.GroupBy)); err != nil {
			return fmt.Errorf("No such groupByAggregator: %q", quoteName(rp.GroupBy))
		}
		for _, t := range b.tags {
			if t.Key == AggregateTagKey {
				return fmt.Errorf("a point may not carry the tag %s itself: its groupByAggregator sets it", AggregateTagKey)
			}
		}
		b.tags = append(b.tags, model.Tag{Key: AggregateTagKey, Value: strings.ToUpper(rp.GroupBy)})
	}
	if rp.Interval == "" {
		// A pre-aggregate of raw points: an ordinary series with the tag.
		b.putIdx = append(b.putIdx, i)
		return b.puts.Add(rp.Metric, b.tags, rp.Timestamp, rp.Value)
	}
	ivMs, err := opentsdb.ParseDuration(rp.Interval)
	if err != nil {
		return fmt.Errorf("Invalid interval: %v", err)
	}
	agg, err := rollup.ParseAggregator(rp.Aggregator)
	if err != nil {
		return err
	}
	if err := b.check.Add(rp.Metric, b.tags, rp.Timestamp, rp.Value); err != nil {
		return err
	}
	b.samples = append(b.samples, RollupSample{Labels: b.check.LastLabels(), Interval: time.Duration(ivMs) * time.Millisecond,
		Agg: agg, T: rp.Timestamp, V: rp.Value})
	b.index = append(b.index, i)
	return nil
}

// commit stores what was added; b.errs then holds every point's outcome.
// A non-nil return: nothing may be acknowledged.
func (b *rollupBatch) commit(ctx context.Context) error {
	if err := b.puts.Commit(ctx); err != nil {
		return err
	}
	for k, e := range b.puts.Errors() {
		if e != nil {
			b.errs[b.putIdx[k]] = e
		}
	}
	if len(b.samples) == 0 {
		return nil
	}
	rerrs := make([]error, len(b.samples))
	if b.s.rollups == nil {
		for k := range rerrs {
			rerrs[k] = errNoRollups
		}
	} else if err := b.s.rollups.WriteRollups(ctx, b.samples, rerrs); err != nil {
		return err
	}
	for k, e := range rerrs {
		if e != nil {
			b.errs[b.index[k]] = e
		}
	}
	b.samples, b.index = b.samples[:0], b.index[:0]
	return nil
}

var errNoRollups = errors.New("rollups are not written on this server")

// quoteName bounds a name quoted in a message.
func quoteName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// handleRollup is /api/rollup (OpenTSDB 2.4's RollupDataPointRpc): the
// points of /api/put with interval and aggregator (stored in the rollup
// table) and/or groupByAggregator (a pre-aggregate, tagged _aggregate).
// Each point is stored or refused on its own; the replies are /api/put's,
// ?summary and ?details included. The body is read whole, bounded by
// -max-body-bytes and -max-decoded-bytes; ?details lists at most
// -put-max-errors errors.
func (s *writes) handleRollup(w http.ResponseWriter, r *http.Request) {
	summary, details, body, lim, ok := s.readBatch(w, r) // handler_histogram.go
	if !ok {
		return
	}
	b := s.newRollupBatch()
	raws := map[int][]byte{}
	err := opentsdb.ParseRollup(body, lim,
		func(i int, rp *opentsdb.RollupPoint, perr error) error {
			if b.add(i, rp, perr) != nil && details && len(raws) < s.cfg.PutMaxErrors {
				var pe *opentsdb.PointError
				if errors.As(perr, &pe) {
					raws[i] = append([]byte(nil), pe.Raw...)
				}
			}
			return nil
		})
	if err == nil {
		err = b.commit(r.Context())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t := s.tallyPoints("opentsdb_rollup", b.errs, raws)                                       // handler_histogram.go
	writePointsReply(w, &t, summary, details, "One or more data points had errors", "rollup") // handler_histogram.go
}

// telnetRollup stores one telnet rollup line and returns the reply line,
// "" on success.
func (s *writes) telnetRollup(ctx context.Context, line []byte) string {
	lim := s.writer.Limits()
	var rp opentsdb.RollupPoint
	if err := opentsdb.ParseRollupLine(line, opentsdb.Limits{MaxTags: lim.MaxTags, MaxNameLen: lim.MaxNameLen}, &rp); err != nil {
		return err.Error()
	}
	b := s.newRollupBatch()
	return telnetPoint(ctx, "rollup", b, b.add(0, &rp, nil)) // handler_histogram.go
}
