package prom

import (
	"fmt"
	"math"
)

// A schema is what the first pass knows of a message: for each field it
// reads, the wire type it must have. Fields not listed are skipped, as
// proto3 requires of unknown fields. check is at least as strict as the
// generated (gogo) decoders, so a body this package accepts is one
// Prometheus' own code accepts too.
type schema struct {
	name   string
	fields []fieldSpec
}

type fieldSpec struct {
	num  int
	kind fieldKind
	sub  *schema // kMessage
}

type fieldKind uint8

const (
	kString        fieldKind = iota + 1 // length-delimited bytes
	kMessage                            // length-delimited, checked against sub
	kVarint                             // any 64-bit varint
	kUint32                             // a varint that fits 32 bits
	kFixed64                            // 8 bytes
	kPackedVarint                       // packed varints, or one varint
	kPackedUint32                       // packed 32-bit varints, or one
	kPackedFixed64                      // packed 8-byte values, or one
)

func (s *schema) spec(num int) *fieldSpec {
	for i := range s.fields {
		if s.fields[i].num == num {
			return &s.fields[i]
		}
	}
	return nil
}

// check verifies that b is a well-formed s. base is b's offset in the body,
// for the error.
func (s *schema) check(b []byte, base int) error {
	off := 0
	for off < len(b) {
		// The fields of the shapes Prometheus' encoders send are taken
		// without the lookup below where their key byte says what they
		// are; anything else goes the long way, errors included, so a
		// schema checks the same with or without these
		// (TestCheckShortcuts holds them to a copy of the schema).
		switch s {
		case labelSchema:
			if end := labelField(b, off); end >= 0 {
				off = end
				continue
			}
		case timeSeriesV1Schema, timeSeriesV2Schema:
			if end := s.timeSeriesField(b, off); end >= 0 {
				off = end
				continue
			}
		}
		num, typ, next := field(b, off)
		if next < 0 {
			return s.malformed(base+off, "bad field key")
		}
		sp := s.spec(num)
		if sp == nil {
			if off = skip(b, next, typ); off < 0 {
				return s.malformed(base+next, fmt.Sprintf("field %d (wire type %d) is truncated or of an unknown wire type", num, typ))
			}
			continue
		}
		var err error
		if off, err = sp.check(b, next, typ, base); err != nil {
			return err
		}
		if off < 0 {
			return s.malformed(base+next, fmt.Sprintf("field %d: wire type %d is wrong or the value is truncated", num, typ))
		}
	}
	return nil
}

// labelField checks the field of a Label at b[off:] the short way and
// returns the offset after it, -1 to leave it to the long way. A Label's
// fields are all strings: any well-formed length-delimited field with a
// one-byte key is what the lookup would accept (a listed string, or an
// unknown field skipped).
func labelField(b []byte, off int) int {
	if c := b[off]; c < 8 || c >= 0x80 || c&7 != wireLen {
		return -1
	}
	return lenEnd(b, off+1)
}

// lenEnd returns the end of the length-delimited value whose length is at
// b[off:], -1 if it is malformed: lenField's end, a one-byte length read
// inline.
func lenEnd(b []byte, off int) int {
	if off < len(b) && b[off] < 0x80 {
		if end := off + 1 + int(b[off]); end <= len(b) {
			return end
		}
		return -1
	}
	_, end := lenField(b, off)
	return end
}

// timeSeriesField checks the field of a TimeSeries at b[off:] the short
// way and returns the offset after it, -1 to leave it to the long way: a
// Sample (field 2 in both versions) in the shape sampleFast reads, a 1.0
// Label (field 1) whose fields labelField takes, 2.0's labels_refs (field
// 1, packed) of references under 2^14, 2.0's Metadata (field 5) whose
// fields metadataFieldsShort takes.
func (s *schema) timeSeriesField(b []byte, off int) int {
	c := b[off]
	if c != 2<<3|wireLen && c != 1<<3|wireLen && c != 5<<3|wireLen {
		return -1
	}
	end := lenEnd(b, off+1)
	if end < 0 {
		return -1
	}
	start := end - int(b[off+1]) // a one-byte length, or checked below
	if b[off+1] >= 0x80 {
		start, _ = lenField(b, off+1)
	}
	var ok bool
	switch {
	case c == 2<<3|wireLen:
		_, _, ok = sampleFast(b[start:end])
	case s == timeSeriesV1Schema:
		ok = c == 1<<3|wireLen && labelFieldsShort(b[start:end])
	default:
		ok = refsOrMetadataShort(c, b[start:end])
	}
	if !ok {
		return -1
	}
	return end
}

// refsOrMetadataShort reports whether the 2.0 field of key c whose value
// is b is labels_refs of short references (shortVarints) or Metadata of
// short fields (metadataFieldsShort).
//
//go:noinline
func refsOrMetadataShort(c byte, b []byte) bool {
	if c == 1<<3|wireLen {
		return shortVarints(b)
	}
	return metadataFieldsShort(b)
}

// shortVarints reports whether b is packed varints of one or two bytes
// each (values under 2^14: they fit a uint32), as 2.0's labels_refs are
// for a symbol table of up to 16,384 symbols. false: the long way checks
// it.
func shortVarints(b []byte) bool {
	for p := 0; p < len(b); p++ {
		if b[p] >= 0x80 {
			if p++; p >= len(b) || b[p] >= 0x80 {
				return false
			}
		}
	}
	return true
}

// metadataFieldsShort reports whether every field of the 2.0 Metadata b is
// a listed varint (type, help_ref, unit_ref) of one or two bytes, which the
// long way accepts too. false: the long way checks it.
func metadataFieldsShort(b []byte) bool {
	for p := 0; p < len(b); p++ {
		if c := b[p]; c != 1<<3|wireVarint && c != 3<<3|wireVarint && c != 4<<3|wireVarint {
			return false
		}
		if p++; p >= len(b) {
			return false
		}
		if b[p] >= 0x80 {
			if p++; p >= len(b) || b[p] >= 0x80 {
				return false
			}
		}
	}
	return true
}

// labelFieldsShort reports whether labelField takes every field of the
// Label b (false: the long way checks it).
func labelFieldsShort(b []byte) bool {
	for p := 0; p < len(b); {
		c := b[p]
		if c < 8 || c >= 0x80 || c&7 != wireLen || p+1 >= len(b) {
			return false
		}
		if n := b[p+1]; n < 0x80 {
			p += 2 + int(n)
			if p > len(b) {
				return false
			}
			continue
		}
		if p = lenEnd(b, p+1); p < 0 {
			return false
		}
	}
	return true
}

func (s *schema) malformed(off int, reason string) error {
	return &MalformedError{What: s.name, Offset: off, Reason: reason}
}

// check checks one field value of wire type typ at b[off:] and returns the
// offset after it, -1 when it is malformed, or the error of a nested message.
func (sp *fieldSpec) check(b []byte, off, typ, base int) (int, error) {
	switch sp.kind {
	case kString:
		if typ != wireLen {
			return -1, nil
		}
		_, end := lenField(b, off)
		return end, nil
	case kMessage:
		if typ != wireLen {
			return -1, nil
		}
		start, end := lenField(b, off)
		if end < 0 {
			return -1, nil
		}
		return end, sp.sub.check(b[start:end], base+start)
	case kVarint, kUint32:
		if typ != wireVarint {
			return -1, nil
		}
		v, next := uvarint(b, off)
		if sp.kind == kUint32 && v > math.MaxUint32 {
			return -1, nil
		}
		return next, nil
	case kFixed64:
		if typ != wireFixed64 || len(b)-off < 8 {
			return -1, nil
		}
		return off + 8, nil
	case kPackedVarint, kPackedUint32:
		switch typ {
		case wireVarint:
			v, next := uvarint(b, off)
			if sp.kind == kPackedUint32 && v > math.MaxUint32 {
				return -1, nil
			}
			return next, nil
		case wireLen:
			start, end := lenField(b, off)
			if end < 0 {
				return -1, nil
			}
			for p := start; p < end; {
				var v uint64
				if v, p = uvarint(b[:end], p); p < 0 || sp.kind == kPackedUint32 && v > math.MaxUint32 {
					return -1, nil
				}
			}
			return end, nil
		}
		return -1, nil
	case kPackedFixed64:
		switch typ {
		case wireFixed64:
			if len(b)-off < 8 {
				return -1, nil
			}
			return off + 8, nil
		case wireLen:
			start, end := lenField(b, off)
			if end < 0 || (end-start)%8 != 0 {
				return -1, nil
			}
			return end, nil
		}
		return -1, nil
	}
	return -1, nil
}

// The messages of Remote-Write 1.0 (prompb/types.proto, remote.proto) and
// 2.0 (prompb/io/prometheus/write/v2/types.proto), as far as they are read.
var (
	labelSchema      = &schema{"prometheus.Label", []fieldSpec{{1, kString, nil}, {2, kString, nil}}}
	sampleV1Schema   = &schema{"prometheus.Sample", []fieldSpec{{1, kFixed64, nil}, {2, kVarint, nil}}}
	exemplarV1Schema = &schema{"prometheus.Exemplar", []fieldSpec{{1, kMessage, labelSchema}, {2, kFixed64, nil}, {3, kVarint, nil}}}
	bucketSpanSchema = &schema{"BucketSpan", []fieldSpec{{1, kVarint, nil}, {2, kVarint, nil}}}
	histogramFields  = []fieldSpec{
		{1, kVarint, nil}, {2, kFixed64, nil}, {3, kFixed64, nil}, {4, kVarint, nil}, {5, kFixed64, nil},
		{6, kVarint, nil}, {7, kFixed64, nil}, {8, kMessage, bucketSpanSchema}, {9, kPackedVarint, nil},
		{10, kPackedFixed64, nil}, {11, kMessage, bucketSpanSchema}, {12, kPackedVarint, nil},
		{13, kPackedFixed64, nil}, {14, kVarint, nil}, {15, kVarint, nil}, {16, kPackedFixed64, nil},
	}
	histogramV1Schema  = &schema{"prometheus.Histogram", histogramFields}
	timeSeriesV1Schema = &schema{"prometheus.TimeSeries", []fieldSpec{
		{1, kMessage, labelSchema}, {2, kMessage, sampleV1Schema}, {3, kMessage, exemplarV1Schema}, {4, kMessage, histogramV1Schema},
	}}
	metadataV1Schema = &schema{"prometheus.MetricMetadata", []fieldSpec{
		{1, kVarint, nil}, {2, kString, nil}, {4, kString, nil}, {5, kString, nil},
	}}
	writeRequestSchema = &schema{"prometheus.WriteRequest", []fieldSpec{
		{1, kMessage, timeSeriesV1Schema}, {3, kMessage, metadataV1Schema},
	}}

	sampleV2Schema     = &schema{"io.prometheus.write.v2.Sample", []fieldSpec{{1, kFixed64, nil}, {2, kVarint, nil}, {3, kVarint, nil}}}
	exemplarV2Schema   = &schema{"io.prometheus.write.v2.Exemplar", []fieldSpec{{1, kPackedUint32, nil}, {2, kFixed64, nil}, {3, kVarint, nil}}}
	histogramV2Schema  = &schema{"io.prometheus.write.v2.Histogram", append(append([]fieldSpec{}, histogramFields...), fieldSpec{17, kVarint, nil})}
	metadataV2Schema   = &schema{"io.prometheus.write.v2.Metadata", []fieldSpec{{1, kVarint, nil}, {3, kUint32, nil}, {4, kUint32, nil}}}
	timeSeriesV2Schema = &schema{"io.prometheus.write.v2.TimeSeries", []fieldSpec{
		{1, kPackedUint32, nil}, {2, kMessage, sampleV2Schema}, {3, kMessage, histogramV2Schema},
		{4, kMessage, exemplarV2Schema}, {5, kMessage, metadataV2Schema},
	}}
	requestV2Schema = &schema{"io.prometheus.write.v2.Request", []fieldSpec{
		{4, kString, nil}, {5, kMessage, timeSeriesV2Schema},
	}}

	// Remote read.
	matcherSchema = &schema{"prometheus.LabelMatcher", []fieldSpec{{1, kVarint, nil}, {2, kString, nil}, {3, kString, nil}}}
	hintsSchema   = &schema{"prometheus.ReadHints", []fieldSpec{{1, kVarint, nil}, {2, kString, nil}, {3, kVarint, nil}, {4, kVarint, nil}, {5, kString, nil}, {6, kVarint, nil}, {7, kVarint, nil}}}
	querySchema   = &schema{"prometheus.Query", []fieldSpec{{1, kVarint, nil}, {2, kVarint, nil}, {3, kMessage, matcherSchema}, {4, kMessage, hintsSchema}}}
	readReqSchema = &schema{"prometheus.ReadRequest", []fieldSpec{{1, kMessage, querySchema}, {2, kPackedVarint, nil}}}
)

// checkMessage verifies that b is a well-formed s.
func checkMessage(s *schema, b []byte) error { return s.check(b, 0) }
