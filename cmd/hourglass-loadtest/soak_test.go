package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSoakCommand runs the soak subcommand against an in-process fake
// server, the test process standing in as the server whose memory is read.
func TestSoakCommand(t *testing.T) {
	var failOpenTSDB atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/api/v1/write":
			w.WriteHeader(http.StatusNoContent)
		case "/api/v1/query_range":
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		case "/api/query":
			if failOpenTSDB.Load() {
				http.Error(w, `{"error":{"code":400,"message":"no"}}`, 400)
				return
			}
			fmt.Fprint(w, `[]`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	js := filepath.Join(t.TempDir(), "soak.json")
	empties := filepath.Join(t.TempDir(), "empty.jsonl")
	// -min-achieved 0: whether 700 ms of writes keep up is a timing
	// (TestJudge checks the verdict).
	args := []string{"soak", "-url", srv.URL, "-pid", strconv.Itoa(os.Getpid()), "-rate", "2000", "-series", "24",
		"-duration", "700ms", "-warmup", "0s", "-warmup-ranges=false", "-sample", "100ms", "-max-slope", "1e9", "-max-spread", "1e9", "-min-achieved", "0", "-quiet", "-json", js,
		"-query-step", "100ms", "-empty-log", empties, "-empty-log-max", "3"}
	var out, errOut bytes.Buffer
	if err := run(args, &out, &errOut); err != nil {
		t.Fatalf("soak: %v\n%s%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "PASS") || !strings.Contains(out.String(), "target 2,000 points/s") {
		t.Fatalf("report:\n%s", out.String())
	}
	b, err := os.ReadFile(js)
	if err != nil || !bytes.Contains(b, []byte(`"target_points_per_second": 2000`)) {
		t.Fatalf("JSON report (%v):\n%s", err, b)
	}
	// Every answer of the fake is empty: the first three are recorded.
	if b, err := os.ReadFile(empties); err != nil || bytes.Count(b, []byte("\n")) != 3 || !bytes.Contains(b, []byte(`"phase":"soak"`)) {
		t.Fatalf("-empty-log (%v):\n%s", err, b)
	}
	var replay bytes.Buffer
	if err := run([]string{"replay-empty", "-url", srv.URL, "-log", empties}, &replay, &errOut); err != nil || strings.Count(replay.String(), "now 0 series") != 3 {
		t.Fatalf("replay-empty: %v\n%s", err, replay.String())
	}
	failOpenTSDB.Store(true)
	out.Reset()
	if err := run(args, &out, &errOut); !errors.Is(err, errSoakFailed) || !strings.Contains(out.String(), "FAIL: queries opentsdb") {
		t.Fatalf("failing soak: %v\n%s", err, out.String())
	}
	if err := run([]string{"soak", "-url", srv.URL, "-pid", "1", "-measure", "0s", "-quiet"}, &out, &errOut); err == nil || errors.Is(err, errSoakFailed) {
		t.Fatalf("a soak with neither rate nor measure: %v", err)
	}
}
