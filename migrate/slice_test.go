package migrate

import (
	"testing"
	"time"
)

func TestSlices(t *testing.T) {
	tests := []struct {
		name             string
		start, end, step int64
		want             []Slice
	}{
		{"exact", 0, 30, 10, []Slice{{0, 10}, {10, 20}, {20, 30}}},
		{"short last", 5, 27, 10, []Slice{{5, 15}, {15, 25}, {25, 27}}},
		{"one longer than range", 0, 5, 10, []Slice{{0, 5}}},
		{"empty range", 10, 10, 5, nil},
		{"reversed", 10, 0, 5, nil},
		{"zero step", 0, 10, 0, nil},
		{"near max", 1<<62 - 3, 1<<62 + 3, 4, []Slice{{1<<62 - 3, 1<<62 + 1}, {1<<62 + 1, 1<<62 + 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Slices(tc.start, tc.end, tc.step)
			if len(got) != len(tc.want) {
				t.Fatalf("Slices(%d, %d, %d) = %v, want %v", tc.start, tc.end, tc.step, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("slice %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestSlicesCoverRange checks that slices tile the range with no gap and no
// overlap for many shapes.
func TestSlicesCoverRange(t *testing.T) {
	for start := int64(0); start < 7; start++ {
		for end := start; end < 40; end++ {
			for step := int64(1); step < 12; step++ {
				ss := Slices(start, end, step)
				next := start
				for _, s := range ss {
					if s.Start != next || s.End <= s.Start || s.End-s.Start > step {
						t.Fatalf("Slices(%d,%d,%d) = %v: bad slice %v", start, end, step, ss, s)
					}
					next = s.End
				}
				if end > start && next != end {
					t.Fatalf("Slices(%d,%d,%d) = %v ends at %d", start, end, step, ss, next)
				}
			}
		}
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "now", want: now.UnixMilli()},
		{in: "1700000000", want: 1700000000000},
		{in: "1700000000123", want: 1700000000123},
		{in: "2025-01-01", want: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()},
		{in: "2025-01-01T10:00:00Z", want: time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC).UnixMilli()},
		{in: "2025-01-01T10:00:00+02:00", want: time.Date(2025, 1, 1, 8, 0, 0, 0, time.UTC).UnixMilli()},
		{in: "30d-ago", want: now.Add(-30 * 24 * time.Hour).UnixMilli()},
		{in: "-90m", want: now.Add(-90 * time.Minute).UnixMilli()},
		{in: "", bad: true},
		{in: "17000000001", bad: true}, // 11 digits: neither s nor ms
		{in: "yesterday", bad: true},
		{in: "0d-ago", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTime(tc.in, now)
			if tc.bad {
				if err == nil {
					t.Fatalf("ParseTime(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseTime(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"1h": time.Hour, "90s": 90 * time.Second, "1d": 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1y": 365 * 24 * time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0s", "-1h", "xd", "1.5d", "d", "99999999999999999d"} {
		if got, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, got)
		}
	}
}
