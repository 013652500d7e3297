package opentsdbhttp

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"

	"hourglass/api/opentsdb"
)

// decoded is one point as a decoder reports it, for comparisons.
func decodeAll(t *testing.T, windows [][]byte) ([]string, error) {
	t.Helper()
	var out []string
	offset := 0
	for _, w := range windows {
		n := 0
		err := opentsdb.ParsePut(w, opentsdb.Limits{}, func(i int, dp *opentsdb.DataPoint, err error) error {
			n = i + 1
			if err != nil {
				out = append(out, fmt.Sprintf("%d error %v", offset+i, err))
				return nil
			}
			out = append(out, fmt.Sprintf("%d %s %d %v %v", offset+i, dp.Metric, dp.Timestamp, dp.Value, dp.Tags))
			return nil
		})
		if err != nil {
			return out, err
		}
		offset += n
	}
	return out, nil
}

// streamWindows cuts body as the streamed /api/put does.
func streamWindows(body []byte, window int64) ([][]byte, error) {
	p := &putStream{r: bufio.NewReaderSize(bytes.NewReader(body), 16), window: window}
	if err := p.open(); err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		w, n, more, err := p.next()
		if err != nil {
			return out, err
		}
		if n > 0 {
			out = append(out, append([]byte(nil), w...))
		}
		if !more {
			return out, nil
		}
	}
}

func TestPutStreamWindows(t *testing.T) {
	var items [][]byte
	for i := 0; i < 50; i++ {
		items = append(items, fmt.Appendf(nil, `{"metric":"m","timestamp":%d,"value":%d,"tags":{"k":"v\"}{["}}`, 1700000000+i, i))
	}
	items[7] = []byte(`null`)
	items[8] = []byte(` 12.5e3 `)
	items[9] = []byte(`"a,]b"`)
	body := append(append([]byte("  [ "), bytes.Join(items, []byte(" ,\n"))...), "]\n "...)
	whole, err := decodeAll(t, [][]byte{body})
	if err != nil {
		t.Fatal(err)
	}
	for _, window := range []int64{1, 64, 300, 1 << 20} {
		ws, err := streamWindows(body, window)
		if err != nil {
			t.Fatalf("window %d: %v", window, err)
		}
		got, err := decodeAll(t, ws)
		if err != nil {
			t.Fatalf("window %d: %v", window, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(whole) {
			t.Fatalf("window %d:\n%v\nwant\n%v", window, got, whole)
		}
	}
	for _, bad := range []string{`[{"a":1}`, `[{"a":1} {"b":2}]`, `[{"a":1}]x`, `{"a":1}`, `[`, `[}]`, ``} {
		if _, err := streamWindows([]byte(bad), 4); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzPutStream: a body the whole-body decoder accepts decodes to the same
// points when streamed in windows.
func FuzzPutStream(f *testing.F) {
	f.Add([]byte(`[{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"b"}},{"metric":"m","timestamp":1700000001,"value":"2","tags":{"a":"b"}}]`), uint8(10))
	f.Add([]byte(`[null, 1, "x", [1,[2]], {"metric":"\"]"}]`), uint8(3))
	f.Add([]byte(` [ ] `), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, window uint8) {
		whole, werr := decodeAll(t, [][]byte{body})
		ws, serr := streamWindows(body, int64(window)+1)
		if werr != nil || len(bytes.TrimSpace(body)) == 0 || bytes.TrimSpace(body)[0] != '[' {
			return // only valid arrays must agree
		}
		if serr != nil {
			t.Fatalf("the whole body decodes but the stream fails: %v", serr)
		}
		got, err := decodeAll(t, ws)
		if err != nil {
			t.Fatalf("a window fails: %v\nwindows %q", err, ws)
		}
		if fmt.Sprint(got) != fmt.Sprint(whole) {
			t.Fatalf("streamed:\n%v\nwhole:\n%v", got, whole)
		}
	})
}
