package app

import (
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in    string
		avail int64
		want  int64
		err   string
	}{
		{"60%", 1000, 600, ""},
		{"100%", 1000, 1000, ""},
		{"12.5%", 8000, 1000, ""},
		{"2000000000", 0, 2000000000, ""},
		{"0", 1000, 0, ""},
		{"60%", 0, 0, "unknown"},
		{"0%", 1000, 0, "percentage"},
		{"150%", 1000, 0, "percentage"},
		{"NaN%", 1000, 0, "percentage"},
		{"-5", 1000, 0, "want bytes"},
		{"4GB", 1000, 0, "want bytes"},
		{"", 1000, 0, "want bytes"},
	} {
		got, err := ParseMemoryLimit(tc.in, tc.avail)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseMemoryLimit(%q, %d) err = %v, want one saying %q", tc.in, tc.avail, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseMemoryLimit(%q, %d) = %d, %v; want %d", tc.in, tc.avail, got, err, tc.want)
		}
	}
}

func TestAvailableMemory(t *testing.T) {
	n, where := availableMemory()
	if n <= 0 || where == "" {
		t.Fatalf("availableMemory() = %d, %q; want the machine's memory", n, where)
	}
	if mt := memTotal(); mt > 0 && n > mt {
		t.Errorf("availableMemory() = %d, more than MemTotal %d", n, mt)
	}
}

func FuzzParseMemoryLimit(f *testing.F) {
	for _, s := range []string{"60%", "0", "123456", "100%", "1e3%", "-1", "%", " 5 %"} {
		f.Add(s, int64(1<<30))
	}
	f.Fuzz(func(t *testing.T, s string, avail int64) {
		n, err := ParseMemoryLimit(s, avail)
		if err != nil {
			if len(err.Error()) > 200 {
				t.Errorf("error of %d bytes quotes too much input", len(err.Error()))
			}
			return
		}
		if n < 0 {
			t.Errorf("ParseMemoryLimit(%q, %d) = %d < 0", s, avail, n)
		}
		if strings.HasSuffix(strings.TrimSpace(s), "%") && n > avail {
			t.Errorf("ParseMemoryLimit(%q, %d) = %d, more than all", s, avail, n)
		}
	})
}

func TestApplyGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name    string
		env     string
		percent int
		want    int
	}{
		{"flag", "", 37, 37},
		{"negative is off", "", -5, -1},
		{"GOGC wins", "80", 37, 100}, // left as the runtime set it from GOGC (here: 100 above)
	} {
		t.Run(c.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			t.Setenv("GOGC", c.env)
			applyGCPercent(c.percent, log)
			if got := debug.SetGCPercent(100); got != c.want {
				t.Errorf("GC percent %d, want %d", got, c.want)
			}
		})
	}
}
