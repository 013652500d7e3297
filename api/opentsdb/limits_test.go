package opentsdb

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// manyTagsJSON is one /api/put point with n distinct tags.
func manyTagsJSON(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"metric":"m","timestamp":1700000000,"value":1,"tags":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":"v` + strconv.Itoa(i) + `"`)
	}
	b.WriteString("}}")
	return []byte(b.String())
}

// TestPutTooManyTagsIsCheap: a point of 80,000 tags (about 1.6 MB, the
// issue's case: 21 CPU-seconds when the duplicate check ran first) is refused
// with a reply of a few hundred bytes, and the work done does not grow with
// the tags past the limit: the allocations of a decode are the same for
// 1,000 and 80,000 tags (each tag decoded would be at least one).
func TestPutTooManyTagsIsCheap(t *testing.T) {
	decode := func(body []byte) (msg string, allocs float64) {
		var d PutDecoder
		run := func() {
			err := d.Decode(body, func(i int, dp *DataPoint, err error) error {
				if err != nil {
					msg = err.Error()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return msg, testing.AllocsPerRun(3, run)
	}
	msgSmall, allocsSmall := decode(manyTagsJSON(1000))
	msg, allocs := decode(manyTagsJSON(80000))
	if !strings.HasPrefix(msg, "Too many tags: 80000 maximum allowed: 32, tags: {") {
		t.Fatalf("message %.200q", msg)
	}
	if !strings.HasPrefix(msgSmall, "Too many tags: 1000 ") {
		t.Fatalf("message %.200q", msgSmall)
	}
	if len(msg) > 600 {
		t.Fatalf("message of %d bytes quotes too much input", len(msg))
	}
	if allocs > allocsSmall+5 {
		t.Fatalf("%v allocations for 80,000 tags against %v for 1,000: work grows with the tags past the limit", allocs, allocsSmall)
	}
}

// TestTelnetTooManyTagsIsCheap is the same for a put line.
func TestTelnetTooManyTagsIsCheap(t *testing.T) {
	line := func(n int) []byte {
		var b strings.Builder
		b.WriteString("put m 1700000000 1")
		for i := range n {
			b.WriteString(" k" + strconv.Itoa(i) + "=v")
		}
		return []byte(b.String())
	}
	parse := func(l []byte) (string, float64) {
		var p LineParser
		var dp DataPoint
		var msg string
		allocs := testing.AllocsPerRun(3, func() {
			err := p.Parse(l, &dp)
			if err == nil {
				t.Fatal("accepted")
			}
			msg = err.Error()
		})
		return msg, allocs
	}
	_, allocsSmall := parse(line(100))
	msg, allocs := parse(line(10000))
	if !strings.HasPrefix(msg, "put: illegal argument: Too many tags: 10000 maximum allowed: 32, tags: {") {
		t.Fatalf("reply %.200q", msg)
	}
	if len(msg) > 600 {
		t.Fatalf("reply of %d bytes quotes too much input", len(msg))
	}
	if allocs > allocsSmall+5 {
		t.Fatalf("%v allocations for 10,000 tags against %v for 100", allocs, allocsSmall)
	}
}

// TestRepliesQuoteLittle: a huge name or value is quoted as a few hundred
// bytes and its length, in every message that quotes one.
func TestRepliesQuoteLittle(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name string
		body string
	}{
		{"metric name", `{"metric":"` + big + `","timestamp":1700000000,"value":1,"tags":{"k":"v"}}`},
		{"bad metric name", `{"metric":"!` + big + `","timestamp":1700000000,"value":1,"tags":{"k":"v"}}`},
		{"tag value", `{"metric":"m","timestamp":1700000000,"value":1,"tags":{"k":"` + big + `"}}`},
		{"tag key", `{"metric":"m","timestamp":1700000000,"value":1,"tags":{"` + big + `":"v"}}`},
		{"bad timestamp of a long metric", `{"metric":"` + big + `","timestamp":99999999999999,"value":1,"tags":{"k":"v"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var msg string
			err := ParsePut([]byte(tc.body), Limits{}, func(i int, dp *DataPoint, err error) error {
				if err != nil {
					msg = err.Error()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if msg == "" || len(msg) > 600 || !strings.Contains(msg, "(1048") {
				t.Fatalf("message of %d bytes: %.300q", len(msg), msg)
			}
		})
	}
	var dp DataPoint
	err := ParsePutLine([]byte("put m 1 1 "+big), Limits{}, &dp)
	if err == nil || len(err.Error()) > 600 {
		t.Fatalf("telnet reply of %d bytes", len(err.Error()))
	}
	if r := UnknownCommand(big); len(r) > 600 {
		t.Fatalf("unknown command reply of %d bytes", len(r))
	}
}

// TestDetailsEchoBounded: a ?details reply echoes a point of a 1 MB metric
// name or 10,000 tags in a few kilobytes, still valid JSON.
func TestDetailsEchoBounded(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for _, body := range [][]byte{
		[]byte(`{"metric":"` + big + `","timestamp":1700000000,"value":1,"tags":{"k":"v"}}`),
		manyTagsJSON(10000),
	} {
		var errs []*PointError
		err := ParsePut(body, Limits{}, func(i int, dp *DataPoint, err error) error {
			if err != nil {
				errs = append(errs, &PointError{Index: i, Message: err.Error(), Raw: body})
			}
			return nil
		})
		if err != nil || len(errs) != 1 {
			t.Fatalf("%v, %d errors", err, len(errs))
		}
		reply := AppendPutSummary(nil, 0, 1, -1, errs)
		if len(reply) > 20<<10 {
			t.Fatalf("reply of %d bytes", len(reply))
		}
		var v map[string]any
		if err := json.Unmarshal(reply, &v); err != nil {
			t.Fatalf("reply is not JSON: %v: %.300s", err, reply)
		}
	}
}
