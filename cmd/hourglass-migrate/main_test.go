package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestFlagErrors(t *testing.T) {
	base := []string{"-src", "http://127.0.0.1:1", "-dst", "http://127.0.0.1:2"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"-h"}, 0, "-from opentsdb|remote-read"},
		{"no start", append([]string{"-from", "opentsdb"}, base...), 2, "-start is required"},
		{"bad start", append([]string{"-from", "opentsdb", "-start", "yesterday"}, base...), 2, `-start: time "yesterday"`},
		{"bad slice", append([]string{"-from", "opentsdb", "-start", "1700000000", "-slice", "0s"}, base...), 2, "-slice"},
		{"relative with state", append([]string{"-from", "opentsdb", "-start", "30d-ago", "-state", "x"}, base...), 2, "absolute times"},
		{"bad from", append([]string{"-from", "influx", "-start", "1700000000"}, base...), 2, `-from "influx"`},
		{"no dst", []string{"-from", "opentsdb", "-start", "1700000000", "-src", "http://a"}, 2, "-dst is required"},
		{"bad url", []string{"-from", "opentsdb", "-start", "1700000000", "-src", "ftp://a", "-dst", "http://b"}, 2, "-src \"ftp://a\""},
		{"end before start", append([]string{"-from", "opentsdb", "-start", "1700000000", "-end", "1600000000"}, base...), 2, "is not after -start"},
		{"bad match", append([]string{"-from", "remote-read", "-start", "1700000000", "-end", "1700003600", "-match", "{job="}, base...), 2, "-match"},
		{"bad ca file", append([]string{"-from", "opentsdb", "-start", "1700000000", "-end", "1700003600", "-src-ca-file", "/nonexistent"}, base...), 2, "-src-ca-file"},
		{"stray argument", append([]string{"-from", "opentsdb", "-start", "1700000000", "extra"}, base...), 2, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(tc.args, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("run(%q) = %d, stderr:\n%s\nwant %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
			}
		})
	}
}
