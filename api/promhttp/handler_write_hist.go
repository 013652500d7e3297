package promhttp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/api/prom"
	"hourglass/chunk"
	"hourglass/ingest"
	"hourglass/internal/errclass"
	"hourglass/model"
	"hourglass/query"
)

// Native histograms over remote write (issue 16): each valid histogram
// sample of a series is appended through the head's WAL beside the
// series' float samples; a histogram over a bound or invalid is rejected
// alone (400 naming it) and never costs the request its float samples.

// histMetrics counts the histogram samples refused by remote write.
type histMetrics struct {
	refused   *prometheus.CounterVec
	exRefused *prometheus.CounterVec
}

func newHistMetrics(reg *prometheus.Registry) *histMetrics {
	m := &histMetrics{refused: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hourglass_remote_write_histograms_refused_total",
		Help: "Native histogram samples refused by remote write, by reason: limit (over -prom-write-max-histogram-buckets), invalid.",
	}, []string{"reason"}),
		exRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_remote_write_exemplars_refused_total",
			Help: "Exemplars dropped by remote write, by reason: limit (labels over 128 characters), invalid, no_sample (their series had no sample or histogram accepted). The request is not failed for them, as Prometheus' receiver does.",
		}, []string{"reason"})}
	if reg != nil {
		reg.MustRegister(m.refused, m.exRefused)
	}
	return m
}

// histogramsAndExemplars queues the series' histogram samples, then its
// exemplars; known is the series' Labels when a float sample (or an
// earlier request) found them.
func (ws *promWriteState) histogramsAndExemplars(s *prom.Series, known model.Labels) error {
	if ws.hb == nil {
		ws.hb = ws.batch.NewHistBatch()
	}
	known, err := ws.histograms(s, known)
	if err != nil {
		return err
	}
	ws.exemplars(s, known)
	return nil
}

// exemplars queues the series' exemplars, once one of its samples or
// histograms has named the series (known). As Prometheus' receiver, an
// exemplar it cannot keep (bad or over-long labels, a series with no
// accepted sample) is dropped and counted, and fails nothing.
func (ws *promWriteState) exemplars(s *prom.Series, known model.Labels) {
	for e, err := range s.ExemplarSamples() {
		var he *prom.HistogramError
		switch {
		case err != nil && errors.As(err, &he) && he.Limit():
			ws.p.histM.exRefused.WithLabelValues("limit").Inc()
			continue
		case err != nil:
			ws.p.histM.exRefused.WithLabelValues("invalid").Inc()
			continue
		case known == "":
			ws.p.histM.exRefused.WithLabelValues("no_sample").Inc()
			continue
		}
		tags := make([]model.Tag, len(e.Labels))
		for i, l := range e.Labels { // they alias the body
			tags[i] = model.Tag{Key: strings.Clone(l.Name), Value: strings.Clone(l.Value)}
		}
		ws.hb.AddExemplar(known, tags, e.Value, e.T)
	}
}

// histograms queues the series' histogram samples and returns the series'
// Labels, known or found.
func (ws *promWriteState) histograms(s *prom.Series, known model.Labels) (model.Labels, error) {
	var bad error
	nbad := 0
	for hs, err := range s.HistogramSamples() {
		if err == nil && (hs.T < 0 || hs.T > query.MaxPromTimestamp) {
			err = fmt.Errorf("%w: histogram timestamp %d ms is outside the range this store holds, 0 to %d", ingest.ErrInvalid, hs.T, query.MaxPromTimestamp)
		}
		if err == nil {
			if known != "" {
				err = ws.hb.AddLabels(known, hs.T, hs.H, hs.FH)
			} else if err = ws.hb.Add(s.Metric, ws.tags, hs.T, hs.H, hs.FH); err == nil {
				known = ws.hb.LastLabels()
			}
		} else {
			var he *prom.HistogramError
			if errors.As(err, &he) && he.Limit() {
				ws.p.histM.refused.WithLabelValues("limit").Inc()
			} else {
				ws.p.histM.refused.WithLabelValues("invalid").Inc()
			}
		}
		if err != nil {
			nbad++
			if bad == nil {
				bad = err
			}
		}
		if ws.hb.Len() >= promCommitEvery {
			if err := ws.commitHist(); err != nil {
				return known, err
			}
		}
	}
	if bad != nil {
		ws.reject(nbad, &prom.SeriesError{Index: s.Index, Labels: promRenderSeries(s), Reason: bad.Error()})
	}
	return known, nil
}

// commitHist appends the queued histogram samples. An error means the
// storage failed.
func (ws *promWriteState) commitHist() error {
	hb := ws.hb
	if hb == nil || hb.Len() == 0 {
		return nil
	}
	defer hb.Reset()
	if err := hb.Commit(ws.ctx); err != nil {
		return err
	}
	for _, err := range hb.Errors() {
		switch {
		case err == nil:
			ws.o.histWritten++
		case errclass.IsInvalid(err):
			ws.reject(1, err)
		default:
			return err
		}
	}
	return nil
}

// histBuckets returns the bound of one histogram's buckets for the decoder:
// the flag, within what a histogram chunk holds.
func histBuckets(cfg Config) int {
	return min(cfg.WriteMaxHistogramBuckets, chunk.MaxHistogramBuckets)
}
