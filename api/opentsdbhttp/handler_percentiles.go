package opentsdbhttp

import (
	"context"
	"net/http"
	"time"

	"hourglass/api/opentsdb"
	"hourglass/query"
)

// percentileRunner is the engine's percentiles over histograms
// (query/histogram_pct.go); a Querier without it refuses them.
type percentileRunner interface {
	RunPercentiles(ctx context.Context, req query.Request, hq query.HistogramQuery) ([]query.Result, error)
}

func pctError(msg, details string) error {
	return &opentsdb.RequestError{Status: http.StatusBadRequest, Message: msg, Details: details}
}

// isHistogramQuery is OpenTSDB's TsdbQuery.isHistogramQuery: a sub-query
// with percentiles or showHistogramBuckets reads histograms only.
func isHistogramQuery(sq *opentsdb.SubQuery) bool {
	return len(sq.Percentiles) > 0 || sq.ShowHistogramBuckets
}

// checkPercentiles refuses what /api/query's percentiles and
// showHistogramBuckets do not support: OpenTSDB allows only sum or none as
// the aggregator and sum as the downsampler over histograms (fixed,
// calendar or 0all), and no rates.
func checkPercentiles(sq *opentsdb.SubQuery, req query.Request) error {
	if req.Aggregator != nil && !req.Aggregator.IsNone() && req.Aggregator.Name() != "sum" {
		return pctError("Percentiles over histograms allow only the sum or none aggregator", "got "+req.Aggregator.Name())
	}
	if d := req.Downsample; d != nil {
		if d.Agg.Name() != "sum" {
			return pctError("Percentiles over histograms allow only sum for downsampling", "got "+d.Agg.Name())
		}
	}
	if sq.Rate {
		return pctError("Rates over histograms are not supported", "drop rate from the sub-query with percentiles")
	}
	return nil
}

// runPercentiles runs a sub-query with percentiles or showHistogramBuckets
// into sb: per group, one series per percentile, named <metric>_pct_<p>,
// then one per bucket, named <metric>_<low>_<high>, <metric>_UNDERFLOW and
// <metric>_OVERFLOW.
func (s *reads) runPercentiles(ctx context.Context, req *opentsdb.QueryRequest, sq *opentsdb.SubQuery, sb *subResult,
	ereq query.Request, t0 time.Time) error {
	pr, ok := s.engine.(percentileRunner)
	if !ok {
		return pctError("Percentiles over histogram data are not computed by this server",
			"histograms written through /api/histogram are read with PromQL's histogram_quantile (/api/v1/query)")
	}
	if req.Delete {
		return pctError("delete is not supported with percentiles", "delete the histograms without percentiles")
	}
	res, err := pr.RunPercentiles(ctx, ereq, query.HistogramQuery{Percentiles: sq.Percentiles, ShowBuckets: sq.ShowHistogramBuckets})
	if err != nil {
		return err
	}
	sb.stats.scanTime = time.Since(t0)
	sb.results = res
	if !req.NoAnnotations {
		if sb.notes, err = s.seriesNotes(ctx, res, ereq.Start, ereq.End); err != nil {
			return err
		}
	}
	return nil
}
