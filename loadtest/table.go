package loadtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Run is one row of a comparison: a system and dialect, its write report,
// optionally a query report, the bytes its data took on disk after the
// server flushed and stopped, and the peak while it ran.
type Run struct {
	System, Dialect string
	Write, Query    *Report
	DiskBytes       int64 // -1 when not measured
	// DiskPeakBytes is the peak sampled over the server's whole run; -1
	// when not measured (the write report's peak, if any, is used then).
	DiskPeakBytes int64
}

// ReadRuns reads a runs file, one run a line, tab-separated:
//
//	system  dialect  write-report.json  query-report.json|-  disk-bytes|-  [peak-disk-bytes|-]
//
// disk-bytes is measured after the server stopped, peak-disk-bytes (the
// sixth column may be left out) while it ran.
// Report paths are relative to the runs file's folder. Blank lines and
// lines starting with # are skipped.
func ReadRuns(path string) ([]Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir := filepath.Dir(path)
	read := func(p string) (*Report, error) {
		if p == "-" || p == "" {
			return nil, nil
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		rf, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer rf.Close()
		return ReadReport(rf)
	}
	var runs []Run
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		col := strings.Split(line, "\t")
		if len(col) != 5 && len(col) != 6 {
			return nil, fmt.Errorf("%s:%d: %d columns, want 5 or 6 (system, dialect, write report, query report, disk bytes, peak disk bytes)", path, ln, len(col))
		}
		r := Run{System: col[0], Dialect: col[1], DiskBytes: -1, DiskPeakBytes: -1}
		if r.Write, err = read(col[2]); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, ln, err)
		}
		if r.Query, err = read(col[3]); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, ln, err)
		}
		if col[4] != "-" {
			if r.DiskBytes, err = strconv.ParseInt(col[4], 10, 64); err != nil {
				return nil, fmt.Errorf("%s:%d: disk bytes: %w", path, ln, err)
			}
		}
		if len(col) == 6 && col[5] != "-" {
			if r.DiskPeakBytes, err = strconv.ParseInt(col[5], 10, 64); err != nil {
				return nil, fmt.Errorf("%s:%d: peak disk bytes: %w", path, ln, err)
			}
		}
		runs = append(runs, r)
	}
	return runs, sc.Err()
}

// WriteTable writes runs as Markdown: one table of the absolute figures,
// then, when the runs hold hourglass and a peer (a system whose name does
// not start with "hourglass"), one of hourglass's figures divided by each
// peer's (see WriteRatios).
//
// The absolute table: ingest points/s, server CPU-s per million points,
// peak RSS (at the end of the writes, and at the end of the queries where
// the row has them), bytes on disk per point (the peak sampled while the
// server ran, or else while writing, and after the server stopped), the
// query run's language and server CPU-s, and each query kind's median and
// p90 in milliseconds.
func WriteTable(w io.Writer, runs []Run) error {
	var b strings.Builder
	header(&b, "| system | dialect | points/s | accepted / sent | server CPU-s per M points | peak RSS MB (writes / with queries) | bytes/point on disk (peak running / after stop) | queries in | query mix server CPU-s |",
		" %s p50 / p90 ms |", "|---|---|---:|---:|---:|---:|---:|---|---:|")
	for i := range runs {
		r := &runs[i]
		fmt.Fprintf(&b, "| %s | %s |", r.System, r.Dialect)
		if wr := r.Write; wr == nil {
			b.WriteString(" — | — |")
		} else {
			fmt.Fprintf(&b, " %s | %s / %s |", thousands(wr.PointsPerSec),
				thousands(float64(storedPoints(wr))), thousands(float64(wr.PointsSent)))
		}
		b.WriteString(cellf(fig(r, figCPU)))
		b.WriteString(figPair(r, figRSSWrite, figRSSQuery, "%.0f"))
		dp, dpok := fig(r, figDiskPeak)
		da, daok := fig(r, figDiskAfter)
		b.WriteString(both(dp, dpok, da, daok, "%.2f"))
		b.WriteString(" " + queryLanguage(r) + " |")
		b.WriteString(cellf(fig(r, figQueryCPU)))
		for _, k := range QueryKinds {
			b.WriteString(queryCell(r, k))
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return WriteRatios(w, runs)
}

// header writes a table's header: the fixed columns, one per query kind
// (kind printed into kindCol), and the alignment row, rule then one
// right-aligned column per kind.
func header(b *strings.Builder, cols, kindCol, rule string) {
	b.WriteString(cols)
	for _, k := range QueryKinds {
		fmt.Fprintf(b, kindCol, k)
	}
	b.WriteString("\n" + rule)
	for range QueryKinds {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
}

// figure names one number of a run.
type figure int

const (
	figPointsPerSec figure = iota
	figCPU                 // server CPU-s per M points written
	figRSSWrite            // peak RSS MB after the writes
	figRSSQuery            // peak RSS MB after the queries
	figDiskPeak            // bytes/point, the peak sampled while writing
	figDiskAfter           // bytes/point after the server stopped
	figQueryCPU            // server CPU-s over the query run
)

// fig returns one figure of r, and whether r has it.
func fig(r *Run, f figure) (float64, bool) {
	wr, q := r.Write, r.Query
	stored := storedPoints(wr)
	switch f {
	case figPointsPerSec:
		return pos(wr != nil, func() float64 { return wr.PointsPerSec })
	case figCPU:
		return pos(wr != nil && wr.Server != nil, func() float64 { return wr.Server.CPUSecondsPerMillionPoints })
	case figRSSWrite:
		return pos(wr != nil && wr.Server != nil, func() float64 { return float64(wr.Server.PeakRSSBytes) / 1e6 })
	case figRSSQuery:
		return pos(q != nil && q.Server != nil, func() float64 { return float64(q.Server.PeakRSSBytes) / 1e6 })
	case figDiskPeak:
		if stored > 0 && r.DiskPeakBytes >= 0 {
			return pos(true, func() float64 { return float64(r.DiskPeakBytes) / float64(stored) })
		}
		return pos(stored > 0 && wr.Disk != nil && wr.Disk.Samples > 0, func() float64 { return float64(wr.Disk.PeakBytes) / float64(stored) })
	case figDiskAfter:
		return pos(stored > 0 && r.DiskBytes >= 0, func() float64 { return float64(r.DiskBytes) / float64(stored) })
	case figQueryCPU:
		return pos(q != nil && q.Server != nil, func() float64 { return q.Server.CPUSeconds })
	}
	return 0, false
}

// pos is get() when have holds and it is positive.
func pos(have bool, get func() float64) (float64, bool) {
	if !have {
		return 0, false
	}
	x := get()
	return x, x > 0
}

// queryFig returns the p50 (p90 when p90) of kind k in r's query run, and
// whether it has one: a kind that only failed has none.
func queryFig(r *Run, k string, p90 bool) (float64, bool) {
	if r.Query == nil {
		return 0, false
	}
	q := r.Query.Queries[k]
	if q == nil || int64(q.Latency.Count) == q.Errors || q.Latency.Count == 0 {
		return 0, false
	}
	if p90 {
		return q.Latency.P90, true
	}
	return q.Latency.P50, true
}

// pair prints "a / b", or a alone when there is no b, or "— / b".
func pair(a float64, aok bool, b float64, bok bool, format string) string {
	if aok && !bok {
		return " " + fmt.Sprintf(format, a) + " |"
	}
	return both(a, aok, b, bok, format)
}

// both prints "a / b", either "—" when missing, or one "—" for neither.
func both(a float64, aok bool, b float64, bok bool, format string) string {
	if !aok && !bok {
		return " — |"
	}
	f := func(x float64, ok bool) string {
		if !ok {
			return "—"
		}
		return fmt.Sprintf(format, x)
	}
	return " " + f(a, aok) + " / " + f(b, bok) + " |"
}

func queryCell(r *Run, k string) string {
	var q *QueryStats
	if r.Query != nil {
		q = r.Query.Queries[k]
	}
	switch {
	case q == nil:
		return " — |"
	case q.Errors > 0 && int64(q.Latency.Count) == q.Errors:
		return fmt.Sprintf(" failed (%d) |", q.Errors)
	}
	s := " " + fmtMs(q.Latency.P50) + " / " + fmtMs(q.Latency.P90)
	if q.Errors > 0 {
		s += fmt.Sprintf(" (%d failed)", q.Errors)
	}
	return s + " |"
}

// queryLanguage names the language of r's query run: PromQL, /api/query.
func queryLanguage(r *Run) string {
	if r.Query == nil {
		return "—"
	}
	switch r.Query.Dialect {
	case QueryProm:
		return "PromQL"
	case QueryOpenTSDB:
		return "/api/query"
	}
	return r.Query.Dialect
}

// isHourglass tells hourglass's rows from the peers'.
func isHourglass(system string) bool { return strings.HasPrefix(system, "hourglass") }

// WriteRatios writes, for every hourglass row and every peer, hourglass's
// figure divided by the peer's: the write figures against the peer's row of
// the same dialect, the query figures (whatever hourglass's query language)
// against the peer's query run. Below 1 hourglass uses less or answers
// sooner, except points/s, where above 1 hourglass is faster. It writes
// nothing when there is no pair to divide.
func WriteRatios(w io.Writer, runs []Run) error {
	var peers []string
	for _, r := range runs {
		if !isHourglass(r.System) && !slices.Contains(peers, r.System) {
			peers = append(peers, r.System)
		}
	}
	var b strings.Builder
	rows := 0
	for _, peer := range peers {
		var peerQuery *Run
		for i := range runs {
			if runs[i].System == peer && runs[i].Query != nil && peerQuery == nil {
				peerQuery = &runs[i]
			}
		}
		for i := range runs {
			hg := &runs[i]
			if !isHourglass(hg.System) {
				continue
			}
			var pw *Run
			for j := range runs {
				if runs[j].System == peer && runs[j].Dialect == hg.Dialect && runs[j].Write != nil {
					pw = &runs[j]
					break
				}
			}
			pq := peerQuery
			if hg.Query == nil {
				pq = nil
			}
			if pw == nil && pq == nil {
				continue
			}
			rows++
			b.WriteString(ratioRow(hg, peer, pw, pq))
		}
	}
	if rows == 0 {
		return nil
	}
	var h strings.Builder
	h.WriteString("\nRatios, hourglass ÷ peer (below 1: hourglass uses less, or answers sooner; points/s: above 1, hourglass is faster):\n\n")
	header(&h, "| hourglass ÷ peer | dialect | points/s | server CPU-s per M points | peak RSS (writes / with queries) | bytes/point on disk (peak running / after stop) | queries in | query mix server CPU-s |",
		" %s p50 / p90 |", "|---|---|---:|---:|---:|---:|---|---:|")
	_, err := io.WriteString(w, h.String()+b.String())
	return err
}

// ratioRow is one row of WriteRatios: hg against the peer's write run pw
// and query run pq (either may be nil).
func ratioRow(hg *Run, peer string, pw, pq *Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s ÷ %s | %s |", hg.System, peer, hg.Dialect)
	div := func(f figure, p *Run) (float64, bool) {
		if p == nil {
			return 0, false
		}
		a, aok := fig(hg, f)
		c, cok := fig(p, f)
		return a / c, aok && cok
	}
	b.WriteString(cellf(div(figPointsPerSec, pw)))
	b.WriteString(cellf(div(figCPU, pw)))
	a, aok := div(figRSSWrite, pw)
	c, cok := div(figRSSQuery, pq)
	b.WriteString(pair(a, aok, c, cok, "%.2f"))
	a, aok = div(figDiskPeak, pw)
	c, cok = div(figDiskAfter, pw)
	b.WriteString(both(a, aok, c, cok, "%.2f"))
	if pq == nil {
		b.WriteString(" — | — |")
	} else {
		fmt.Fprintf(&b, " %s vs %s |", queryLanguage(hg), queryLanguage(pq))
		b.WriteString(cellf(div(figQueryCPU, pq)))
	}
	for _, k := range QueryKinds {
		if pq == nil {
			b.WriteString(" — |")
			continue
		}
		h50, ok1 := queryFig(hg, k, false)
		h90, ok2 := queryFig(hg, k, true)
		p50, ok3 := queryFig(pq, k, false)
		p90, ok4 := queryFig(pq, k, true)
		if !(ok1 && ok2 && ok3 && ok4) || p50 <= 0 || p90 <= 0 {
			b.WriteString(" — |")
			continue
		}
		fmt.Fprintf(&b, " %.2f / %.2f |", h50/p50, h90/p90)
	}
	b.WriteString("\n")
	return b.String()
}

// cellf is a cell with two decimals, or — without a figure.
func cellf(x float64, ok bool) string {
	if !ok {
		return " — |"
	}
	return fmt.Sprintf(" %.2f |", x)
}

// figPair is pair of two figures of r.
func figPair(r *Run, f1, f2 figure, format string) string {
	a, aok := fig(r, f1)
	b, bok := fig(r, f2)
	return pair(a, aok, b, bok, format)
}

func storedPoints(r *Report) int64 {
	if r == nil {
		return 0
	}
	return r.PointsAccepted + r.PointsUnconfirmed
}

// fmtMs prints milliseconds with three significant digits or so.
func fmtMs(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}
