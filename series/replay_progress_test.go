package series

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series/wal"
	"hourglass/uid"
)

// TestReplayProgressLines: with a clock moving 1 s a record batch, the
// progress lines come every 5 s with growing bytes, a rate and a time left
// that match, and the last line says the whole WAL was read.
func TestReplayProgressLines(t *testing.T) {
	dir := t.TempDir()
	for i, size := range []int64{4000, 4000, 2000} {
		if err := os.WriteFile(wal.SegmentPath(dir, i+1), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := newReplayProgress(slog.New(slog.NewTextHandler(&buf, nil)), dir, func() time.Time { return clock })
	// 10 records of 400 bytes per 4000-byte segment, 5 in the last; 256 calls each.
	for seg, n := range []int{10, 10, 5} {
		for k := 1; k <= n; k++ {
			clock = clock.Add(time.Second)
			for range 255 {
				p.observe(seg+1, int64(k)*400-1, int64(n)*400)
			}
			p.observe(seg+1, int64(k)*400, int64(n)*400)
		}
	}
	p.finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 5+1 { // at 5, 10, 15, 20, 25 s, and the end
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	num := func(line, key string) float64 {
		m := regexp.MustCompile(` ` + key + `=([0-9.]+)`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no %s in %q", key, line)
		}
		f, _ := strconv.ParseFloat(m[1], 64)
		return f
	}
	for i, l := range lines[:5] {
		at := float64(5 * (i + 1)) // seconds; 400 bytes a second
		if !strings.Contains(l, "wal replay progress") || num(l, "bytes") != 400*at || num(l, "total_bytes") != 10000 ||
			num(l, "percent") != 400*at/100 || !strings.Contains(l, "eta="+(time.Duration((10000-400*at)/400)*time.Second).String()) {
			t.Errorf("line %d: %s", i, l)
		}
	}
	last := lines[5]
	if !strings.Contains(last, "wal replay finished") || num(last, "bytes") != 10000 || num(last, "records") != 25*256 || num(last, "percent") != 100 {
		t.Errorf("last line: %s", last)
	}
}

// TestReplayLogsProgressAtOpen: a head opened on a WAL logs the finished
// line with every byte of it.
func TestReplayLogsProgressAtOpen(t *testing.T) {
	dir := t.TempDir()
	st := openPebble(t, filepath.Join(dir, "store"))
	layout, err := RecordLayout(context.Background(), st, rowkey.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	open := func() *DB {
		h, err := OpenDB(context.Background(), st, uid.New(st, layout, uid.Options{}), Options{
			Layout: layout, Logger: slog.New(slog.NewTextHandler(&buf, nil)), WAL: wal.Options{Dir: filepath.Join(dir, "wal")},
		})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := open()
	l := MakeLabels("m", []Tag{{Key: "k", Value: "v"}})
	for i := range 100 {
		if err := h.Append(context.Background(), []Sample{{Labels: l, T: int64(i), V: chunk.Int(1)}}, make([]error, 1)); err != nil {
			t.Fatal(err)
		}
	}
	size := h.log.Size()
	if err := h.Abandon(); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	h = open()
	defer h.Close()
	m := regexp.MustCompile(`msg="wal replay finished" bytes=(\d+) total_bytes=(\d+) records=100 `).FindStringSubmatch(buf.String())
	if m == nil || m[1] != m[2] || m[1] != strconv.FormatInt(size, 10) {
		t.Errorf("want a finished line with %d bytes and 100 records; log:\n%s", size, buf.String())
	}
}
