package pebble

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"

	"hourglass/store"
)

// TestKeyEncoding freezes the on-disk key format: changing an expected
// value here means existing data directories no longer read.
func TestKeyEncoding(t *testing.T) {
	tests := []struct {
		name           string
		table          store.Table
		row, qualifier string
		want           string // hex
	}{
		{"Plain", store.TableData, "ab", "q", "01" + "6162" + "0001" + "71"},
		{"EmptyQualifier", store.TableUID, "ab", "", "02" + "6162" + "0001"},
		{"ZeroInRow", store.TableData, "a\x00b", "", "01" + "6100ff62" + "0001"},
		{"ZeroAtEnds", store.TableIndex, "\x00a\x00", "", "03" + "00ff6100ff" + "0001"},
		{"FFInRow", store.TableMeta, "\xff\x00\xff", "", "04" + "ff00ffff" + "0001"},
		{"ZeroQualifierNotEscaped", store.TableData, "r", "\x00\x01\x00", "01" + "72" + "0001" + "000100"},
		// The example of docs/format/store.md (without the tags).
		{"DataRowKey", store.TableData, "\x07\x00\x00\x01\x69\x55\xb9\x00", "\x00\x04\x93\xe0\x00\x00",
			"01" + "07" + "00ff00ff01" + "6955b900ff" + "0001" + "000493e00000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := appendKey(nil, tc.table, []byte(tc.row), []byte(tc.qualifier))
			if hex.EncodeToString(got) != tc.want {
				t.Fatalf("appendKey = %x, want %s", got, tc.want)
			}
			if len(got) != keyLen([]byte(tc.row), []byte(tc.qualifier)) {
				t.Fatalf("keyLen = %d, len(key) = %d", keyLen([]byte(tc.row), []byte(tc.qualifier)), len(got))
			}
			put := make([]byte, len(got))
			putKey(put, tc.table, []byte(tc.row), []byte(tc.qualifier))
			if !bytes.Equal(put, got) {
				t.Fatalf("putKey = %x, appendKey = %x", put, got)
			}
			table, row, qualifier, err := decodeKey(got, nil)
			if err != nil || table != tc.table || string(row) != tc.row || string(qualifier) != tc.qualifier {
				t.Fatalf("decodeKey = %d, %q, %q, %v", table, row, qualifier, err)
			}
		})
	}
}

func TestDecodeKeyCorrupt(t *testing.T) {
	for _, k := range []string{
		"", "01", "0100", "0161", "016162", // too short or no terminator
		"016100", "0161000201", "0161007f", // bad escapes
		"0100ff", "0100ff00", // escaped zero, then nothing
	} {
		key, _ := hex.DecodeString(k)
		if _, _, _, err := decodeKey(key, nil); !errors.Is(err, errCorruptKey) {
			t.Errorf("decodeKey(%s) = %v, want errCorruptKey", k, err)
		}
	}
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

func addKeySeeds(f *testing.F) {
	for _, s := range [][2]string{
		{"ab", "ab\x00"},
		{"ab\x00", "ab\x00\x01"},
		{"ab\x00", "ab\x01"},
		{"ab\x00\xff", "ab\x01"},
		{"\x00", "\x00\x00"},
		{"\x00\x01", "\x00\xff"},
		{"\xff", "\xff\x00"},
		{"a", "a"},
		{"", "\x00"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), []byte("q"), []byte("\x00"))
	}
}

// FuzzKeyOrder checks that the encoding sorts as the raw (row, qualifier)
// pairs sort, that it round-trips, and that range bounds map exactly: for
// a bound b, every key of row r sorts below appendBound(b) if r < b, and at
// or above it if r >= b.
func FuzzKeyOrder(f *testing.F) {
	addKeySeeds(f)
	f.Fuzz(func(t *testing.T, a, b, qa, qb []byte) {
		ka := appendKey(nil, store.TableData, a, qa)
		kb := appendKey(nil, store.TableData, b, qb)
		want := bytes.Compare(a, b)
		if want == 0 {
			want = bytes.Compare(qa, qb)
		}
		if got := bytes.Compare(ka, kb); sign(got) != sign(want) {
			t.Fatalf("compare(encode(%q/%q), encode(%q/%q)) = %d, want %d", a, qa, b, qb, got, want)
		}
		put := make([]byte, keyLen(a, qa))
		if putKey(put, store.TableData, a, qa); !bytes.Equal(put, ka) {
			t.Fatalf("putKey(%q/%q) = %x, appendKey = %x", a, qa, put, ka)
		}
		for _, c := range []struct{ row, q, key []byte }{{a, qa, ka}, {b, qb, kb}} {
			table, row, q, err := decodeKey(c.key, []byte("junk")[:0])
			if err != nil || table != store.TableData || !bytes.Equal(row, c.row) || !bytes.Equal(q, c.q) {
				t.Fatalf("decodeKey(encode(%q/%q)) = %d, %q, %q, %v", c.row, c.q, table, row, q, err)
			}
		}
		// b as a range bound against row a.
		bound := appendBound(nil, store.TableData, b)
		if below, want := bytes.Compare(ka, bound) < 0, bytes.Compare(a, b) < 0; below != want {
			t.Fatalf("key of row %q below bound %q: %v, want %v", a, b, below, want)
		}
		// The row's key range holds exactly its keys.
		lo, hi := appendRowPrefix(nil, store.TableData, a), appendRowEnd(nil, store.TableData, a)
		inA := bytes.Compare(kb, lo) >= 0 && bytes.Compare(kb, hi) < 0
		if inA != bytes.Equal(a, b) {
			t.Fatalf("key of row %q in the key range of row %q: %v", b, a, inA)
		}
		// Tables do not mix.
		if kt := appendKey(nil, store.TableUID, a, qa); bytes.Compare(kt, tableEnd(store.TableData)) < 0 {
			t.Fatalf("key of table uid below the end of table data")
		}
	})
}

// FuzzDecodeKey checks that decoding arbitrary bytes never panics, and that
// whatever decodes re-encodes to the same bytes.
func FuzzDecodeKey(f *testing.F) {
	for _, s := range []string{"", "\x01", "\x01ab\x00\x01q", "\x01a\x00\xffb\x00\x01", "\x01\x00", "\x01\x00\x02", "\x01\x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		table, row, q, err := decodeKey(key, nil)
		if err != nil {
			if !errors.Is(err, errCorruptKey) {
				t.Fatalf("decodeKey(%x) = %v, not errCorruptKey", key, err)
			}
			return
		}
		if again := appendKey(nil, table, row, q); !bytes.Equal(again, key) {
			t.Fatalf("decodeKey(%x) = %d, %q, %q, which encodes to %x", key, table, row, q, again)
		}
	})
}

// BenchmarkDecodeKey decodes the key of a data-table cell: a 50-byte row
// with small UIDs (many zero bytes to unescape) and a 6-byte qualifier.
func BenchmarkDecodeKey(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	s := makeSeries(rng, 1, 1)[0]
	key := appendKey(nil, store.TableData, s.appendRow(nil, 1_767_225_600), appendQualifier(nil, 0))
	var row []byte
	b.SetBytes(int64(len(key)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var err error
		if _, row, _, err = decodeKey(key, row[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
