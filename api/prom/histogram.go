package prom

import (
	"fmt"
	"iter"
	"math"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/histogram"

	"hourglass/internal/quote"
)

// Native histograms and exemplars of a remote-write series (both
// messages): decoded into Prometheus' model types, bounded and validated
// as Prometheus' own receiver validates them before its head stores them.

// Default bounds of the histogram and exemplar decoding.
const (
	// DefaultMaxHistogramBuckets bounds the buckets (positive and negative
	// together) of one histogram, and the spans and custom bounds of each.
	DefaultMaxHistogramBuckets = 4096
	// DefaultMaxExemplarLabelRunes bounds an exemplar's label names and
	// values together, in UTF-8 characters: Prometheus' own limit
	// (exemplar.ExemplarMaxLabelSetLength).
	DefaultMaxExemplarLabelRunes = 128
)

// HistogramSample is one native histogram sample: a timestamp in ms and
// either an integer histogram (the message's count_int) or a float one.
type HistogramSample struct {
	T  int64
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}

// Exemplar is one exemplar of a series. Its label strings alias the body.
type Exemplar struct {
	Labels []Label
	Value  float64
	T      int64
}

// HistogramError says why one histogram sample or exemplar of a series is
// refused; the other samples of the series are unaffected.
type HistogramError struct {
	What   string // "histogram" or "exemplar"
	Index  int    // position among the series' histograms or exemplars, from 0
	Reason string
	limit  bool
}

func (e *HistogramError) Error() string {
	return fmt.Sprintf("%s #%d: %s", e.What, e.Index, e.Reason)
}

// Limit reports whether the error is a bound of this receiver (a flag),
// rather than an invalid histogram.
func (e *HistogramError) Limit() bool { return e.limit }

func histogramError(what string, i int, limit bool, format string, args ...any) error {
	return &HistogramError{What: what, Index: i, Reason: fmt.Sprintf(format, args...), limit: limit}
}

// HistogramSamples iterates the series' native histogram samples in the
// order sent. A sample that is over the decoder's bounds or invalid comes
// with a *HistogramError and no histogram.
func (s *Series) HistogramSamples() iter.Seq2[HistogramSample, error] {
	return func(yield func(HistogramSample, error) bool) {
		maxB := DefaultMaxHistogramBuckets
		if s.dec != nil && s.dec.MaxHistogramBuckets > 0 {
			maxB = s.dec.MaxHistogramBuckets
		}
		// prometheus.TimeSeries.histograms is field 4, io.prometheus.write.v2's 3.
		s.eachRepeated(4, 3, func(i int, b []byte) bool {
			hs, err := parseHistogram(b, maxB)
			if err != nil {
				hs, err = HistogramSample{}, histogramError("histogram", i, isLimit(err), "%v", err)
			}
			return yield(hs, err)
		})
	}
}

// ExemplarSamples iterates the series' exemplars in the order sent. An exemplar
// with bad labels, or labels over the decoder's bound, comes with a
// *HistogramError. An exemplar's Labels are valid until the next one is
// yielded (the slice is reused) and alias the body.
func (s *Series) ExemplarSamples() iter.Seq2[Exemplar, error] {
	return func(yield func(Exemplar, error) bool) {
		maxR := DefaultMaxExemplarLabelRunes
		if s.dec != nil && s.dec.MaxExemplarLabelRunes > 0 {
			maxR = s.dec.MaxExemplarLabelRunes
		}
		var ls []Label
		// prometheus.TimeSeries.exemplars is field 3, io.prometheus.write.v2's 4.
		s.eachRepeated(3, 4, func(i int, b []byte) bool {
			var e Exemplar
			var err error
			ls, e, err = s.parseExemplar(ls[:0], b, maxR)
			if err != nil {
				e = Exemplar{}
				err = histogramError("exemplar", i, isLimit(err), "%v", err)
			}
			return yield(e, err)
		})
	}
}

// eachRepeated calls f with the index and data of each occurrence of a
// repeated message field of the series, field v1 in a 1.0 TimeSeries and
// v2 in a 2.0 one, until f returns false.
func (s *Series) eachRepeated(v1, v2 int, f func(i int, b []byte) bool) {
	num := v1
	if s.msg == MessageV2 {
		num = v2
	}
	i := 0
	eachField(s.raw, num, func(b []byte) bool {
		ok := f(i, b)
		i++
		return ok
	})
}

// eachField calls f with the data of every length-delimited field num of
// the message b, until f returns false.
func eachField(b []byte, num int, f func([]byte) bool) {
	for off := 0; off >= 0 && off < len(b); {
		n, typ, next := field(b, off)
		if next < 0 {
			return
		}
		if n == num && typ == wireLen {
			start, end := lenField(b, next)
			if end < 0 || !f(b[start:end]) {
				return
			}
			off = end
			continue
		}
		off = skip(b, next, typ)
	}
}

// limitError is an error of a receiver bound.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

func isLimit(err error) bool { _, ok := err.(*limitError); return ok }

// histFields gathers a Histogram message's fields.
type histFields struct {
	isFloat                bool
	countI, zeroI          uint64
	countF, zeroF, sum, zt float64
	schema                 int32
	hint                   histogram.CounterResetHint
	t                      int64
	spans                  [2][]histogram.Span // negative, positive
	deltas                 [2][]int64
	counts                 [2][]float64
	custom                 []float64
}

// parseHistogram decodes one Histogram message (either version).
func parseHistogram(b []byte, maxBuckets int) (HistogramSample, error) {
	var f histFields
	nb := 0 // values of repeated fields so far: the bound is checked as they come
	over := func() error {
		return &limitError{fmt.Sprintf("more than %d buckets, spans or custom bounds (-prom-write-max-histogram-buckets)", maxBuckets)}
	}
	for off := 0; off < len(b); {
		num, typ, next := field(b, off)
		if next < 0 {
			return HistogramSample{}, fmt.Errorf("malformed histogram")
		}
		off = next
		switch {
		case typ == wireVarint:
			var v uint64
			if v, off = uvarint(b, off); off < 0 {
				return HistogramSample{}, fmt.Errorf("malformed histogram")
			}
			switch num {
			case 1:
				f.countI, f.countF, f.isFloat = v, 0, false // a oneof: the last one sent wins
			case 4:
				f.schema = int32(uint32(v>>1) ^ -uint32(v&1))
			case 6:
				f.zeroI, f.zeroF = v, 0
			case 9, 12:
				f.deltas[sideOf(num)] = append(f.deltas[sideOf(num)], int64(v>>1)^-int64(v&1))
				nb++
			case 14:
				if v <= uint64(histogram.GaugeType) {
					f.hint = histogram.CounterResetHint(v)
				}
			case 15:
				f.t = int64(v)
			}
		case typ == wireFixed64:
			var v uint64
			if v, off = fixed64(b, off); off < 0 {
				return HistogramSample{}, fmt.Errorf("malformed histogram")
			}
			f.fixed(num, math.Float64frombits(v), &nb)
		case typ == wireLen:
			start, end := lenField(b, off)
			if end < 0 {
				return HistogramSample{}, fmt.Errorf("malformed histogram")
			}
			off = end
			if err := f.packed(num, b[start:end], &nb, maxBuckets); err != nil {
				return HistogramSample{}, err
			}
		default:
			if off = skip(b, off, typ); off < 0 {
				return HistogramSample{}, fmt.Errorf("malformed histogram")
			}
		}
		if nb > 2*maxBuckets+2 {
			return HistogramSample{}, over()
		}
	}
	return f.build(maxBuckets)
}

// sideOf maps the negative fields (8, 9, 10) to 0, the positive (11, 12, 13) to 1.
func sideOf(num int) int {
	if num >= 11 {
		return 1
	}
	return 0
}

func (f *histFields) fixed(num int, v float64, nb *int) {
	switch num {
	case 2:
		f.countF, f.countI, f.isFloat = v, 0, true
	case 3:
		f.sum = v
	case 5:
		f.zt = v
	case 7:
		f.zeroF, f.zeroI = v, 0
	case 10, 13:
		f.counts[sideOf(num)] = append(f.counts[sideOf(num)], v)
		*nb++
	case 16:
		f.custom = append(f.custom, v)
		*nb++
	}
}

func (f *histFields) packed(num int, b []byte, nb *int, maxBuckets int) error {
	switch num {
	case 8, 11: // a BucketSpan
		var sp histogram.Span
		for off := 0; off < len(b); {
			n, typ, next := field(b, off)
			if next < 0 || typ != wireVarint {
				if off = skip(b, next, typ); next < 0 || off < 0 {
					return fmt.Errorf("malformed bucket span")
				}
				continue
			}
			var v uint64
			if v, off = uvarint(b, next); off < 0 {
				return fmt.Errorf("malformed bucket span")
			}
			switch n {
			case 1:
				sp.Offset = int32(uint32(v>>1) ^ -uint32(v&1))
			case 2:
				sp.Length = uint32(v)
			}
		}
		if sp.Length > uint32(maxBuckets) {
			return &limitError{fmt.Sprintf("a span of %d buckets, more than %d (-prom-write-max-histogram-buckets)", sp.Length, maxBuckets)}
		}
		f.spans[sideOf(num)] = append(f.spans[sideOf(num)], sp)
		*nb++
	case 9, 12:
		for off := 0; off < len(b); {
			var v uint64
			if v, off = uvarint(b, off); off < 0 {
				return fmt.Errorf("malformed bucket deltas")
			}
			f.deltas[sideOf(num)] = append(f.deltas[sideOf(num)], int64(v>>1)^-int64(v&1))
			if *nb++; *nb > 2*maxBuckets+2 {
				return nil // the caller reports the bound
			}
		}
	case 10, 13, 16:
		if len(b)%8 != 0 {
			return fmt.Errorf("malformed packed doubles")
		}
		if *nb+len(b)/8 > 2*maxBuckets+2 {
			*nb += len(b) / 8
			return nil
		}
		for off := 0; off < len(b); off += 8 {
			v, _ := fixed64(b, off)
			f.fixed(num, math.Float64frombits(v), nb)
		}
	}
	return nil
}

// build checks the bounds and makes the histogram; it validates it as
// Prometheus' head does (histogram.Validate).
func (f *histFields) build(maxBuckets int) (HistogramSample, error) {
	nBuckets := len(f.deltas[0]) + len(f.deltas[1])
	if f.isFloat {
		nBuckets = len(f.counts[0]) + len(f.counts[1])
	}
	if nBuckets > maxBuckets || len(f.spans[0]) > maxBuckets || len(f.spans[1]) > maxBuckets || len(f.custom) > maxBuckets {
		return HistogramSample{}, &limitError{fmt.Sprintf("%d buckets, more than %d (-prom-write-max-histogram-buckets)", nBuckets, maxBuckets)}
	}
	if f.isFloat {
		fh := &histogram.FloatHistogram{CounterResetHint: f.hint, Schema: f.schema, ZeroThreshold: f.zt,
			ZeroCount: f.zeroF, Count: f.countF, Sum: f.sum, NegativeSpans: f.spans[0], PositiveSpans: f.spans[1],
			NegativeBuckets: f.counts[0], PositiveBuckets: f.counts[1], CustomValues: f.custom}
		if err := fh.Validate(); err != nil {
			return HistogramSample{}, err
		}
		return HistogramSample{T: f.t, FH: fh}, nil
	}
	h := &histogram.Histogram{CounterResetHint: f.hint, Schema: f.schema, ZeroThreshold: f.zt,
		ZeroCount: f.zeroI, Count: f.countI, Sum: f.sum, NegativeSpans: f.spans[0], PositiveSpans: f.spans[1],
		NegativeBuckets: f.deltas[0], PositiveBuckets: f.deltas[1], CustomValues: f.custom}
	if err := h.Validate(); err != nil {
		return HistogramSample{}, err
	}
	return HistogramSample{T: f.t, H: h}, nil
}

// parseExemplar decodes one Exemplar message: 1.0 carries its labels, 2.0
// references into the symbol table.
func (s *Series) parseExemplar(ls []Label, b []byte, maxRunes int) ([]Label, Exemplar, error) {
	var e Exemplar
	var refs []uint64
	for off := 0; off < len(b); {
		num, typ, next := field(b, off)
		if next < 0 {
			return ls, e, fmt.Errorf("malformed exemplar")
		}
		switch {
		case num == 1 && typ == wireLen && s.msg == MessageV1:
			start, end := lenField(b, next)
			if end < 0 {
				return ls, e, fmt.Errorf("malformed exemplar")
			}
			name, value := parseLabel(b[start:end])
			ls = append(ls, Label{name, value})
			off = end
		case num == 1 && s.msg == MessageV2 && (typ == wireLen || typ == wireVarint):
			if typ == wireVarint {
				var v uint64
				v, off = uvarint(b, next)
				refs = append(refs, v)
				break
			}
			start, end := lenField(b, next)
			for p := start; p >= 0 && p < end; {
				var v uint64
				if v, p = uvarint(b[:end], p); p >= 0 {
					refs = append(refs, v)
				}
			}
			off = end
		case num == 2 && typ == wireFixed64:
			var v uint64
			v, off = fixed64(b, next)
			e.Value = math.Float64frombits(v)
		case num == 3 && typ == wireVarint:
			var v uint64
			v, off = uvarint(b, next)
			e.T = int64(v)
		default:
			off = skip(b, next, typ)
		}
		if off < 0 || len(ls)+len(refs)/2 > maxRunes {
			if off < 0 {
				return ls, e, fmt.Errorf("malformed exemplar")
			}
			return ls, e, &limitError{fmt.Sprintf("exemplar labels longer than %d characters (Prometheus' exemplar limit)", maxRunes)}
		}
	}
	if s.msg == MessageV2 {
		if len(refs)%2 != 0 {
			return ls, e, fmt.Errorf("labels_refs has an odd length, %d", len(refs))
		}
		nsym := uint64(len(s.dec.symbols))
		for i := 0; i < len(refs); i += 2 {
			if refs[i] >= nsym || refs[i+1] >= nsym {
				return ls, e, fmt.Errorf("label reference %d=%d outside of the symbol table of %d", refs[i], refs[i+1], nsym)
			}
			ls = append(ls, Label{s.dec.symbol(refs[i]), s.dec.symbol(refs[i+1])})
		}
	}
	runes := 0
	for _, l := range ls {
		if l.Name == "" || !utf8.ValidString(l.Name) || !utf8.ValidString(l.Value) {
			return ls, e, fmt.Errorf("exemplar label %q is empty or not valid UTF-8", quote.String(l.Name))
		}
		runes += utf8.RuneCountInString(l.Name) + utf8.RuneCountInString(l.Value)
	}
	if runes > maxRunes {
		return ls, e, &limitError{fmt.Sprintf("exemplar labels of %d characters, more than %d (Prometheus' exemplar limit)", runes, maxRunes)}
	}
	e.Labels = ls
	return ls, e, nil
}
