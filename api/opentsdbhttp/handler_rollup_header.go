package opentsdbhttp

import (
	"net/http"
	"slices"
	"strings"

	"hourglass/query"
)

// RollupHeader names the rollup intervals an /api/query answer was read
// from (comma-separated, e.g. "1h"), absent when every sub-query read raw
// points; the web page shows it beside the chart.
const RollupHeader = "X-Hourglass-Rollup"

// setRollupHeader sets RollupHeader from the sub-queries' reads.
func setRollupHeader(w http.ResponseWriter, subs []subResult) {
	var ivs []int64
	for _, sb := range subs {
		if sb.rollup > 0 && !slices.Contains(ivs, sb.rollup) {
			ivs = append(ivs, sb.rollup)
		}
	}
	if len(ivs) == 0 {
		return
	}
	slices.Sort(ivs)
	names := make([]string, len(ivs))
	for i, iv := range ivs {
		names[i] = query.FormatInterval(iv)
	}
	w.Header().Set(RollupHeader, strings.Join(names, ","))
}
