package prom

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"hourglass/internal/quote"
)

// Message is the protobuf message of a remote-write body.
type Message uint8

const (
	// MessageV1 is prometheus.WriteRequest, Remote-Write 1.0.
	MessageV1 Message = 1
	// MessageV2 is io.prometheus.write.v2.Request, Remote-Write 2.0.
	MessageV2 Message = 2
)

func (m Message) String() string {
	switch m {
	case MessageV1:
		return "prometheus.WriteRequest"
	case MessageV2:
		return "io.prometheus.write.v2.Request"
	}
	return fmt.Sprintf("Message(%d)", uint8(m))
}

// ParseWriteContentType returns the message a remote-write Content-Type
// names, as the Remote-Write 2.0 specification lists them:
//
//	application/x-protobuf                                       1.0
//	application/x-protobuf;proto=prometheus.WriteRequest         1.0
//	application/x-protobuf;proto=io.prometheus.write.v2.Request  2.0
//
// An empty Content-Type is taken as 1.0, as Prometheus' own receiver does.
// Anything else is ErrUnsupportedContentType (415).
func ParseWriteContentType(ct string) (Message, error) {
	ct = strings.TrimSpace(ct)
	if ct == "" {
		return MessageV1, nil
	}
	parts := strings.Split(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(parts[0]), "application/x-protobuf") {
		return 0, fmt.Errorf("%w %q: remote write takes application/x-protobuf", ErrUnsupportedContentType, ct)
	}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			return 0, fmt.Errorf("%w %q: parameter %q is not key=value", ErrUnsupportedContentType, ct, p)
		}
		if !strings.EqualFold(strings.TrimSpace(k), "proto") {
			continue
		}
		switch strings.Trim(strings.TrimSpace(v), `"`) {
		case MessageV1.String():
			return MessageV1, nil
		case MessageV2.String():
			return MessageV2, nil
		}
		return 0, fmt.Errorf("%w %q: unknown proto %q; this receiver reads %s and %s",
			ErrUnsupportedContentType, ct, v, MessageV1, MessageV2)
	}
	return MessageV1, nil
}

// Label is one label of a series as sent. Its strings alias the decoded
// body: they are valid only as long as the body is.
type Label struct {
	Name, Value string
}

// MetricName is the label that names a series' metric.
const MetricName = "__name__"

// MetricType is a metric's type as remote write sends it.
type MetricType uint8

// The metric types of both messages (their numbers coincide).
const (
	MetricUnknown MetricType = iota
	MetricCounter
	MetricGauge
	MetricHistogram
	MetricGaugeHistogram
	MetricSummary
	MetricInfo
	MetricStateSet
)

// String returns the type as Prometheus' metadata API writes it.
func (t MetricType) String() string {
	switch t {
	case MetricCounter:
		return "counter"
	case MetricGauge:
		return "gauge"
	case MetricHistogram:
		return "histogram"
	case MetricGaugeHistogram:
		return "gaugehistogram"
	case MetricSummary:
		return "summary"
	case MetricInfo:
		return "info"
	case MetricStateSet:
		return "stateset"
	}
	return "unknown"
}

func metricType(v uint64) MetricType {
	if v > uint64(MetricStateSet) {
		return MetricUnknown // proto3 enums are open: an unknown value is no error
	}
	return MetricType(v)
}

// Metadata describes a metric: Remote-Write 1.0 sends it apart from the
// series (MetricMetadata), 2.0 with each series.
type Metadata struct {
	Metric string // 1.0: metric_family_name; 2.0: the series' __name__
	Type   MetricType
	Help   string
	Unit   string
}

// Series is one series of a write request. Labels, Metric and Metadata
// alias the body; the Series itself is reused for the next one, so keep
// nothing of it past the callback.
type Series struct {
	Index      int     // position in the request, from 0
	Labels     []Label // sorted by name; as many as were sent, up to Decoder.MaxLabels
	Metric     string  // the value of __name__
	NumSamples int
	Histograms int      // native histogram samples (HistogramSamples decodes them)
	Exemplars  int      // exemplars (Exemplars decodes them)
	Metadata   Metadata // 2.0 only
	// Err is a *SeriesError when the series is invalid: no __name__, an
	// empty or duplicated label name, names or values that are not UTF-8,
	// bad symbol references (2.0), no samples at all (2.0).
	Err error

	msg       Message
	raw       []byte // the TimeSeries message
	samplesAt int    // where in raw its first sample is (its fields before hold none)
	nLabels   int    // labels sent, even past MaxLabels
	badLabel  string // why the labels are invalid
	entry     *cacheEntry
	dec       *Decoder // its bounds and, for 2.0, the symbol table
}

// Samples iterates the series' float samples in the order sent:
// timestamp in ms and value, bit for bit (NaN payloads included).
func (s *Series) Samples() iter.Seq2[int64, float64] {
	return func(yield func(int64, float64) bool) {
		b := s.raw
		for off := s.samplesAt; off < len(b); {
			if b[off] == 2<<3|wireLen && off+1 < len(b) && b[off+1] < 0x80 {
				// A sample with a one-byte length (the body was checked),
				// in the shape sampleFast reads or any other.
				start, end := off+2, off+2+int(b[off+1])
				t, v, ok := sampleFast(b[start:end])
				if !ok {
					t, v = parseSample(b[start:end])
				}
				if !yield(t, math.Float64frombits(v)) {
					return
				}
				off = end
				continue
			}
			num, typ, next := field(b, off)
			if num == 2 && typ == wireLen {
				start, end := lenField(b, next)
				t, v := parseSample(b[start:end])
				if !yield(t, math.Float64frombits(v)) {
					return
				}
				off = end
				continue
			}
			off = skip(b, next, typ)
		}
	}
}

// parseSample reads a Sample of either version (the first pass checked it).
// Repeated fields keep the last value, as protobuf decoders do.
func parseSample(b []byte) (int64, uint64) {
	var t int64
	var v uint64
	for off := 0; off < len(b); {
		num, typ, next := field(b, off)
		switch {
		case num == 1 && typ == wireFixed64:
			v, off = fixed64(b, next)
		case num == 2 && typ == wireVarint:
			var x uint64
			x, off = uvarint(b, next)
			t = int64(x)
		default:
			off = skip(b, next, typ)
		}
	}
	return t, v
}

// DefaultMaxLabels bounds the labels of one series the decoder collects.
const DefaultMaxLabels = 1024

// Decoder decodes remote-write bodies. Reuse one for many requests (it keeps
// its scratch space); it is not safe for concurrent use. With a Cache it
// remembers the valid series it has seen, so that a series sent again costs
// one lookup (see Series.Ref).
type Decoder struct {
	// MaxLabels bounds the labels of one series; a series with more is
	// invalid. Zero means DefaultMaxLabels.
	MaxLabels int
	// Cache, if not nil, remembers valid series (it may be shared by
	// decoders in different goroutines).
	Cache *SeriesCache
	// MaxHistogramBuckets and MaxExemplarLabelRunes bound one histogram
	// and one exemplar (histogram.go); zero means the defaults.
	MaxHistogramBuckets   int
	MaxExemplarLabelRunes int

	series  Series
	labels  []Label
	refs    []uint32
	symbols []symbolSpan // 2.0: where each symbol is in the body
	body    []byte
	key     []byte      // the series' labels as Label fields: the cache's key (in the body or keyBuf)
	keyBuf  []byte      // key's bytes when they are not the body's as they are
	prev    *cacheEntry // the request's previous series' entry (cache.go)
}

// Decode checks that body is a well-formed msg (else a *MalformedError,
// and no callback has run), then calls onSeries for every series in order,
// invalid ones included with their Err set, and onMeta (which may be nil)
// for every 1.0 MetricMetadata. A callback's error stops the decoding and
// is returned.
func (d *Decoder) Decode(msg Message, body []byte, onSeries func(*Series) error, onMeta func(*Metadata) error) error {
	switch msg {
	case MessageV1:
		if err := checkMessage(writeRequestSchema, body); err != nil {
			return err
		}
	case MessageV2:
		if err := checkMessage(requestV2Schema, body); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: message %v", ErrUnsupportedContentType, msg)
	}
	d.body, d.prev = body, nil
	defer func() { d.body, d.prev, d.key = nil, nil, nil }()
	if d.MaxLabels <= 0 {
		d.MaxLabels = DefaultMaxLabels
	}
	if msg == MessageV2 {
		d.symbols = d.symbols[:0]
		for off := 0; off < len(body); {
			num, typ, next := field(body, off)
			if num == 4 && typ == wireLen {
				if len(body) > math.MaxUint32 {
					return &MalformedError{What: msg.String(), Offset: off, Reason: "body larger than 4 GiB"}
				}
				start, end := lenField(body, next)
				d.symbols = append(d.symbols, symbolSpan{uint32(start), uint32(end)})
				off = end
				continue
			}
			off = skip(body, next, typ)
		}
	}
	idx := 0
	for off := 0; off < len(body); {
		num, typ, next := field(body, off)
		if typ != wireLen {
			off = skip(body, next, typ)
			continue
		}
		start, end := lenField(body, next)
		off = end
		switch {
		case num == 1 && msg == MessageV1:
			d.seriesV1(idx, body[start:end])
		case num == 5 && msg == MessageV2:
			d.seriesV2(idx, body[start:end])
		case num == 3 && msg == MessageV1:
			if onMeta != nil {
				m := parseMetadataV1(body[start:end])
				if err := onMeta(&m); err != nil {
					return err
				}
			}
			continue
		default:
			continue
		}
		idx++
		if err := onSeries(&d.series); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) reset(idx int, msg Message, raw []byte) *Series {
	d.labels, d.key, d.keyBuf = d.labels[:0], nil, d.keyBuf[:0]
	d.series = Series{Index: idx, msg: msg, raw: raw, dec: d}
	return &d.series
}

func (d *Decoder) addLabel(s *Series, name, value string) {
	s.nLabels++
	if len(d.labels) < d.MaxLabels {
		d.labels = append(d.labels, Label{name, value})
	}
}

func (d *Decoder) seriesV1(idx int, b []byte) {
	s := d.reset(idx, MessageV1, b)
	// The key is the label fields as sent: the body's own bytes while they
	// come one after the other (as every encoder sends them), a copy once
	// another field comes between two of them.
	kStart, kEnd, copied := 0, 0, false
	for off := 0; off < len(b); {
		at := off
		num, start, end, short := shortLenField(b, off)
		if !short {
			var typ, next int
			num, typ, next = field(b, off)
			if typ != wireLen {
				off = skip(b, next, typ)
				continue
			}
			start, end = lenField(b, next)
		}
		off = end
		switch num {
		case 1:
			switch {
			case d.Cache == nil:
				name, value := parseLabel(b[start:end])
				d.addLabel(s, name, value)
			case !copied && (kStart == kEnd || kEnd == at):
				if kStart == kEnd {
					kStart = at
				}
				kEnd = end
			default:
				if !copied {
					d.keyBuf = append(d.keyBuf[:0], b[kStart:kEnd]...)
					copied = true
				}
				d.keyBuf = append(d.keyBuf, b[at:end]...)
			}
		case 2:
			if s.NumSamples == 0 {
				s.samplesAt = at
			}
			s.NumSamples++
		case 3:
			s.Exemplars++
		case 4:
			s.Histograms++
		}
	}
	if d.Cache != nil {
		if copied {
			d.key = d.keyBuf
		} else {
			d.key = b[kStart:kEnd]
		}
		d.keyed(s)
	} else {
		d.finish(s)
	}
}

// shortLenField reads the length-delimited field at b[off:] when its key
// and its length are one byte each (the body was checked): its number and
// where its data starts and ends. ok is false for any other field, which
// the caller reads with field.
func shortLenField(b []byte, off int) (num, start, end int, ok bool) {
	if c := b[off]; c&7 == wireLen && c < 0x80 && off+1 < len(b) && b[off+1] < 0x80 {
		return int(c >> 3), off + 2, off + 2 + int(b[off+1]), true
	}
	return 0, 0, 0, false
}

func parseLabel(b []byte) (name, value string) {
	for off := 0; off < len(b); {
		num, typ, next := field(b, off)
		if typ != wireLen {
			off = skip(b, next, typ)
			continue
		}
		start, end := lenField(b, next)
		off = end
		switch num {
		case 1:
			name = bytesString(b[start:end])
		case 2:
			value = bytesString(b[start:end])
		}
	}
	return name, value
}

func parseMetadataV1(b []byte) Metadata {
	var m Metadata
	for off := 0; off < len(b); {
		num, typ, next := field(b, off)
		if num == 1 && typ == wireVarint {
			var v uint64
			v, off = uvarint(b, next)
			m.Type = metricType(v)
			continue
		}
		if typ != wireLen {
			off = skip(b, next, typ)
			continue
		}
		start, end := lenField(b, next)
		off = end
		switch num {
		case 2:
			m.Metric = bytesString(b[start:end])
		case 4:
			m.Help = bytesString(b[start:end])
		case 5:
			m.Unit = bytesString(b[start:end])
		}
	}
	return m
}

func (d *Decoder) seriesV2(idx int, b []byte) {
	s := d.reset(idx, MessageV2, b)
	d.refs = d.refs[:0]
	nrefs := 0
	maxRefs := 2 * d.MaxLabels
	addRef := func(v uint64) {
		nrefs++
		if len(d.refs) < maxRefs {
			d.refs = append(d.refs, uint32(v))
		}
	}
	var helpRef, unitRef uint64
	for off := 0; off < len(b); {
		at := off
		num, start, end, short := shortLenField(b, off)
		if !short {
			var typ, next int
			num, typ, next = field(b, off)
			switch {
			case num == 1 && typ == wireVarint:
				var v uint64
				v, off = uvarint(b, next)
				addRef(v)
				continue
			case typ != wireLen:
				off = skip(b, next, typ)
				continue
			}
			start, end = lenField(b, next)
		}
		off = end
		switch num {
		case 1:
			for p := start; p < end; {
				var v uint64
				if c := b[p]; c < 0x80 { // a one-byte reference
					v = uint64(c)
					p++
				} else if p+1 < end && b[p+1] < 0x80 { // two bytes: a table of up to 16,384 symbols
					v = uint64(c&0x7f) | uint64(b[p+1])<<7
					p += 2
				} else {
					v, p = uvarint(b[:end], p)
				}
				addRef(v)
			}
		case 2:
			if s.NumSamples == 0 {
				s.samplesAt = at
			}
			s.NumSamples++
		case 3:
			s.Histograms++
		case 4:
			s.Exemplars++
		case 5:
			// Metadata: a message field seen twice merges, field by field.
			mb := b[start:end]
			for p := 0; p < len(mb); {
				n, t, nx := field(mb, p)
				if t != wireVarint {
					p = skip(mb, nx, t)
					continue
				}
				var v uint64
				v, p = uvarint(mb, nx)
				switch n {
				case 1:
					s.Metadata.Type = metricType(v)
				case 3:
					helpRef = v
				case 4:
					unitRef = v
				}
			}
		}
	}
	nsym := uint64(len(d.symbols))
	switch {
	case nrefs%2 != 0:
		s.badLabel = fmt.Sprintf("labels_refs has an odd length, %d", nrefs)
	case helpRef >= nsym || unitRef >= nsym:
		s.badLabel = fmt.Sprintf("metadata help_ref %d or unit_ref %d outside of the symbol table of %d", helpRef, unitRef, nsym)
	}
	// With a cache, a series whose labels all resolve is found by its key,
	// their bytes as Label fields, written straight from the symbols: the
	// labels themselves are read from the key only for a series not found.
	keyed := d.Cache != nil && len(d.refs) == nrefs
	if s.badLabel == "" {
		s.Metadata.Help, s.Metadata.Unit = d.symbol(helpRef), d.symbol(unitRef)
		s.nLabels = nrefs / 2
		for i := 0; i+1 < len(d.refs); i += 2 {
			n, v := uint64(d.refs[i]), uint64(d.refs[i+1])
			if n >= nsym || v >= nsym {
				s.badLabel = fmt.Sprintf("label reference %d=%d outside of the symbol table of %d", n, v, nsym)
				break
			}
			if keyed {
				d.keyBuf = appendLabelField(d.keyBuf, d.symbol(n), d.symbol(v))
			} else {
				d.labels = append(d.labels, Label{d.symbol(n), d.symbol(v)})
			}
		}
	}
	if s.badLabel == "" && s.NumSamples == 0 && s.Histograms == 0 {
		s.badLabel = "no samples or histograms (a 2.0 series must carry at least one)"
	}
	switch {
	case keyed && s.badLabel == "":
		d.key = d.keyBuf
		s.nLabels = 0
		d.keyed(s)
	case keyed:
		// Invalid: its labels, for the error, from the key.
		d.addKeyLabels(s, d.keyBuf)
		s.nLabels = nrefs / 2
		d.finish(s)
	default:
		d.finish(s)
	}
	if s.Err == nil {
		s.Metadata.Metric = s.Metric
	}
}

// symbolSpan is where a symbol's bytes are in the body: body[start:end].
type symbolSpan struct{ start, end uint32 }

// symbol returns symbol i, within the table (or 0 of an empty table: "").
func (d *Decoder) symbol(i uint64) string {
	if i >= uint64(len(d.symbols)) {
		return ""
	}
	sp := d.symbols[i]
	return unsafe.String(unsafe.SliceData(d.body[sp.start:sp.end]), sp.end-sp.start)
}

// finish sorts the labels and validates the series.
func (d *Decoder) finish(s *Series) {
	slices.SortFunc(d.labels, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	s.Labels = d.labels
	reason := s.badLabel
	if reason == "" {
		reason = validateLabels(s)
	}
	if reason != "" {
		s.Err = &SeriesError{Index: s.Index, Labels: FormatLabels(s.Labels), Reason: reason}
	}
}

func validateLabels(s *Series) string {
	if s.nLabels > len(s.Labels) {
		return fmt.Sprintf("%d labels, more than the limit of %d", s.nLabels, len(s.Labels))
	}
	for i, l := range s.Labels {
		switch {
		case l.Name == "":
			return "empty label name"
		case i > 0 && s.Labels[i-1].Name == l.Name:
			return fmt.Sprintf("duplicate label name %q", quote.String(l.Name))
		case !utf8.ValidString(l.Name):
			return fmt.Sprintf("label name %q is not valid UTF-8", quote.String(l.Name))
		case !utf8.ValidString(l.Value):
			return fmt.Sprintf("value of label %q is not valid UTF-8", quote.String(l.Name))
		case l.Name == MetricName:
			s.Metric = l.Value
		}
	}
	if s.Metric == "" {
		return "no __name__ label (or an empty one): every series needs a metric name"
	}
	return ""
}

// bytesString returns b as a string without copying: the string aliases
// the body, which outlives every use the decoder's callers make of it.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
