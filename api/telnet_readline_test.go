package api

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"hourglass/api/opentsdbhttp"
)

// readLine gives the same lines whether a line is whole in the reader's
// buffer (returned in it) or spans it (gathered in the scratch buffer):
// each line without its end of line, a line past max consumed and
// refused, the last line without a newline read at EOF.
func TestReadLine(t *testing.T) {
	const max = 20
	long := strings.Repeat("x", max+1)
	input := "put a 1 1 k=v\r\n" + // whole in the buffer
		"\n" +
		"put spanning 1767225600 1.5\n" + // past the 16-byte buffer: gathered, then too long
		strings.Repeat("y", max) + "\n" + // exactly max, across two fills
		long + "\n" + // one byte too many
		strings.Repeat("z", 40) + "\r\n" + // past the buffer and max
		"ok\n" +
		"last without newline"
	want := []struct {
		line    string
		tooLong bool
	}{
		{"put a 1 1 k=v", false}, {"", false}, {"", true}, {strings.Repeat("y", max), false},
		{"", true}, {"", true}, {"ok", false}, {"last without newline", false},
	}
	br := bufio.NewReaderSize(strings.NewReader(input), 16)
	var buf []byte
	for i, w := range want {
		line, err := readLine(br, max, &buf)
		if w.tooLong {
			if !errors.Is(err, opentsdbhttp.ErrLineTooLong) {
				t.Fatalf("line %d: %q, %v; want ErrLineTooLong", i, line, err)
			}
			continue
		}
		if err != nil || string(line) != w.line {
			t.Fatalf("line %d: %q, %v; want %q", i, line, err, w.line)
		}
	}
	if line, err := readLine(br, max, &buf); err != io.EOF || len(line) != 0 {
		t.Fatalf("after the last line: %q, %v; want EOF", line, err)
	}
}
