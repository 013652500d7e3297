package loadtest

import (
	"bytes"
	"strings"
	"testing"
)

// TestRatios checks the ratio table: hourglass's rows against each peer's
// row of the same dialect for writes and against the peer's query run for
// queries, whatever hourglass's query language.
func TestRatios(t *testing.T) {
	w := func(pps, cpu, rssMB float64, peak, after int64) (*Report, int64) {
		return &Report{Mode: "write", PointsSent: 2_000_000, PointsAccepted: 2_000_000, PointsPerSec: pps,
			Server: &ServerStats{CPUSecondsPerMillionPoints: cpu, PeakRSSBytes: int64(rssMB * 1e6)},
			Disk:   &DiskStats{PeakBytes: peak, Samples: 3}}, after
	}
	q := func(lang string, cpu, rssMB, p50, p90 float64) *Report {
		return &Report{Mode: "query", Dialect: lang, Server: &ServerStats{CPUSeconds: cpu, PeakRSSBytes: int64(rssMB * 1e6)},
			Queries: map[string]*QueryStats{KindRaw: {Latency: Summary{Count: 5, P50: p50, P90: p90}},
				KindLong: {Latency: Summary{Count: 2}, Errors: 2}}}
	}
	run := func(sys, d string, wr *Report, disk int64, qr *Report) Run {
		if wr == nil {
			disk = -1
		}
		return Run{System: sys, Dialect: d, Write: wr, DiskBytes: disk, DiskPeakBytes: -1, Query: qr}
	}
	hw1, hd1 := w(1e6, 1.0, 300, 3e6, 2e6)
	htw, htd := w(5e5, 2.0, 310, 4e6, 3e6)
	vw1, vd1 := w(2e6, 0.5, 200, 1e6, 1e6)
	vtw, vtd := w(1e6, 1.0, 210, 2e6, 1e6)
	pw1, pd1 := w(5e5, 2.0, 400, 6e6, 8e6)
	runs := []Run{
		run("hourglass (fsync)", "prom-rw1", hw1, hd1, q(QueryProm, 10, 600, 10, 20)),
		run("hourglass (fsync)", "telnet", htw, htd, nil),
		run("hourglass (fsync)", "query: OpenTSDB /api/query", nil, 0, q(QueryOpenTSDB, 5, 700, 5, 40)),
		run("VictoriaMetrics", "prom-rw1", vw1, vd1, q(QueryProm, 4, 250, 5, 10)),
		run("VictoriaMetrics", "telnet", vtw, vtd, nil),
		run("Prometheus", "prom-rw1", pw1, pd1, q(QueryProm, 20, 500, 20, 40)),
	}
	runs[3].DiskPeakBytes = 1.5e6 // sampled over the server's whole run: it wins over the write run's peak
	var b bytes.Buffer
	if err := WriteTable(&b, runs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		// absolute figures
		"| hourglass (fsync) | prom-rw1 | 1,000,000 | 2,000,000 / 2,000,000 | 1.00 | 300 / 600 | 1.50 / 1.00 | PromQL | 10.00 | 10.0 / 20.0 |",
		"| hourglass (fsync) | query: OpenTSDB /api/query | — | — | — | — / 700 | — | /api/query | 5.00 | 5.00 / 40.0 |",
		// ratios
		"| VictoriaMetrics | prom-rw1 | 2,000,000 | 2,000,000 / 2,000,000 | 0.50 | 200 / 250 | 0.75 / 0.50 |",
		"| hourglass (fsync) ÷ VictoriaMetrics | prom-rw1 | 0.50 | 2.00 | 1.50 / 2.40 | 2.00 / 2.00 | PromQL vs PromQL | 2.50 | 2.00 / 2.00 |",
		"| hourglass (fsync) ÷ VictoriaMetrics | telnet | 0.50 | 2.00 | 1.48 | 2.00 / 3.00 | — | — | — |",
		"| hourglass (fsync) ÷ VictoriaMetrics | query: OpenTSDB /api/query | — | — | — / 2.80 | — | /api/query vs PromQL | 1.25 | 1.00 / 4.00 |",
		"| hourglass (fsync) ÷ Prometheus | prom-rw1 | 2.00 | 0.50 | 0.75 / 1.20 | 0.50 / 0.25 | PromQL vs PromQL | 0.50 | 0.50 / 0.50 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no line containing\n%s\nin\n%s", want, out)
		}
	}
	if strings.Contains(out, "÷ Prometheus | telnet") {
		t.Errorf("a ratio against a dialect the peer did not run:\n%s", out)
	}
	// The long query only failed on every side: no ratio for it.
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "| hourglass (fsync) ÷") && !strings.HasSuffix(line, "| — |") {
			t.Errorf("ratio row with a long-query figure though every long query failed: %s", line)
		}
	}
	b.Reset()
	if err := WriteTable(&b, runs[3:]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "÷") {
		t.Errorf("ratios without hourglass rows:\n%s", b.String())
	}
}
