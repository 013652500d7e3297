package loadtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Run is one row of a comparison: a system and dialect, its write report,
// optionally a query report, and the bytes its data took on disk after the
// server flushed and stopped.
type Run struct {
	System, Dialect string
	Write, Query    *Report
	DiskBytes       int64 // -1 when not measured
}

// ReadRuns reads a runs file, one run a line, tab-separated:
//
//	system  dialect  write-report.json  query-report.json|-  disk-bytes|-
//
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
		if len(col) != 5 {
			return nil, fmt.Errorf("%s:%d: %d columns, want 5 (system, dialect, write report, query report, disk bytes)", path, ln, len(col))
		}
		r := Run{System: col[0], Dialect: col[1], DiskBytes: -1}
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
		runs = append(runs, r)
	}
	return runs, sc.Err()
}

// WriteTable writes runs as one Markdown table: ingest points/s, server
// CPU-s per million points, peak RSS (at the end of the writes, and at the
// end of the queries where the row has them), bytes on disk per point, and
// each query kind's median and p90 in milliseconds.
func WriteTable(w io.Writer, runs []Run) error {
	var b strings.Builder
	b.WriteString("| system | dialect | points/s | accepted / sent | server CPU-s per M points | peak RSS MB (writes / with queries) | bytes/point on disk |")
	for _, k := range QueryKinds {
		fmt.Fprintf(&b, " %s p50 / p90 ms |", k)
	}
	b.WriteString("\n|---|---|---:|---:|---:|---:|---:|")
	for range QueryKinds {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %s |", r.System, r.Dialect)
		wr := r.Write
		if wr == nil {
			b.WriteString(" — | — | — | — |")
		} else {
			fmt.Fprintf(&b, " %s | %s / %s |", thousands(wr.PointsPerSec),
				thousands(float64(wr.PointsAccepted+wr.PointsUnconfirmed)), thousands(float64(wr.PointsSent)))
			if wr.Server != nil && wr.Server.CPUSecondsPerMillionPoints > 0 {
				fmt.Fprintf(&b, " %.2f |", wr.Server.CPUSecondsPerMillionPoints)
			} else {
				b.WriteString(" — |")
			}
			// Peak RSS while writing, then over the queries too (VmHWM
			// only grows), when the row has a query run.
			switch {
			case wr.Server == nil || wr.Server.PeakRSSBytes <= 0:
				b.WriteString(" — |")
			case r.Query != nil && r.Query.Server != nil:
				fmt.Fprintf(&b, " %.0f / %.0f |", float64(wr.Server.PeakRSSBytes)/1e6, float64(r.Query.Server.PeakRSSBytes)/1e6)
			default:
				fmt.Fprintf(&b, " %.0f |", float64(wr.Server.PeakRSSBytes)/1e6)
			}
		}
		if stored := storedPoints(wr); r.DiskBytes >= 0 && stored > 0 {
			fmt.Fprintf(&b, " %.2f |", float64(r.DiskBytes)/float64(stored))
		} else {
			b.WriteString(" — |")
		}
		for _, k := range QueryKinds {
			q := (*QueryStats)(nil)
			if r.Query != nil {
				q = r.Query.Queries[k]
			}
			switch {
			case q == nil:
				b.WriteString(" — |")
			case q.Errors > 0 && int64(q.Latency.Count) == q.Errors:
				fmt.Fprintf(&b, " failed (%d) |", q.Errors)
			default:
				fmt.Fprintf(&b, " %s / %s", fmtMs(q.Latency.P50), fmtMs(q.Latency.P90))
				if q.Errors > 0 {
					fmt.Fprintf(&b, " (%d failed)", q.Errors)
				}
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
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
