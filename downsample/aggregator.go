package downsample

import (
	"sort"
	"strconv"
)

// Interpolation is how a series that has no point at a timestamp is given a
// value there when series are aggregated together (OpenTSDB's
// Aggregators.Interpolation).
type Interpolation uint8

const (
	// Lerp interpolates linearly between the points before and after
	// (OpenTSDB LERP): in integer arithmetic, truncating, when both are
	// integers, in float64 otherwise.
	Lerp Interpolation = iota
	// ZeroIfMissing substitutes 0 (OpenTSDB ZIM).
	ZeroIfMissing
	// MaxIfMissing substitutes the largest value of the type, so that the
	// series never wins a min (OpenTSDB MAX: Long.MAX_VALUE, Double.MAX_VALUE).
	MaxIfMissing
	// MinIfMissing substitutes the smallest value of the type, so that the
	// series never wins a max (OpenTSDB MIN: Long.MIN_VALUE, -Double.MAX_VALUE).
	MinIfMissing
	// PrevIfMissing substitutes the series' previous value (OpenTSDB PREV).
	PrevIfMissing
)

// String returns OpenTSDB's name of the method: LERP, ZIM, MAX, MIN or PREV.
func (i Interpolation) String() string {
	switch i {
	case Lerp:
		return "LERP"
	case ZeroIfMissing:
		return "ZIM"
	case MaxIfMissing:
		return "MAX"
	case MinIfMissing:
		return "MIN"
	case PrevIfMissing:
		return "PREV"
	}
	return "Interpolation(" + strconv.Itoa(int(i)) + ")"
}

// kind is the function an Aggregator computes.
type kind uint8

const (
	kSum kind = iota
	kMin
	kMax
	kAvg
	kMedian
	kDev
	kCount
	kFirst
	kLast
	kDiff
	kMult
	kSquareSum
	kNone
	kPercentile
)

// estimation is an Apache Commons Math Percentile.EstimationType.
type estimation uint8

const (
	estLegacy estimation = iota // Commons Math's default
	estR3
	estR7
)

// Aggregator is one of OpenTSDB's aggregation functions together with the
// interpolation it uses across series. Aggregators are immutable, shared, and
// safe for concurrent use; get them from Lookup.
type Aggregator struct {
	name   string
	kind   kind
	interp Interpolation
	pct    float64    // percentile in (0, 100], for kPercentile
	est    estimation // for kPercentile
}

// Name returns the name the aggregator is looked up by, e.g. "zimsum".
func (a *Aggregator) Name() string { return a.name }

// String returns the aggregator's name.
func (a *Aggregator) String() string { return a.name }

// Interpolation returns the method used for a series that has no point at a
// timestamp when series are aggregated together.
func (a *Aggregator) Interpolation() Interpolation { return a.interp }

// IsNone reports whether a is "none", which means "do not aggregate": the
// caller emits each series on its own. It cannot be used for downsampling.
func (a *Aggregator) IsNone() bool { return a.kind == kNone }

// Ints aggregates integers the way OpenTSDB's runLong does: sum, mult and
// squareSum wrap around on overflow like Java longs, avg divides with integer
// division (truncating toward zero), median is element n/2 of the sorted
// values, dev and the percentiles are computed in float64 and truncated
// toward zero. count counts every value. An empty vals gives 0. vals is used
// as scratch and may be reordered.
func (a *Aggregator) Ints(vals []int64) int64 {
	var acc intAcc
	acc.reset(a, vals[:0])
	for _, v := range vals {
		acc.add(v)
	}
	return acc.result()
}

// Floats aggregates floats the way OpenTSDB's NaN-aware runDouble does: NaN
// inputs are skipped, and if every input is NaN (or there is none) the result
// is NaN, except for count, which then gives 0. vals is used as scratch and
// may be reordered.
func (a *Aggregator) Floats(vals []float64) float64 {
	var acc floatAcc
	acc.reset(a, vals[:0])
	for _, v := range vals {
		acc.add(v)
	}
	return acc.result()
}

// registry maps names to aggregators, as Aggregators.java does in v2.4.1.
var registry = func() map[string]*Aggregator {
	m := make(map[string]*Aggregator, 48)
	add := func(a *Aggregator) { m[a.name] = a }
	add(&Aggregator{name: "sum", kind: kSum, interp: Lerp})
	add(&Aggregator{name: "zimsum", kind: kSum, interp: ZeroIfMissing})
	add(&Aggregator{name: "pfsum", kind: kSum, interp: PrevIfMissing})
	add(&Aggregator{name: "min", kind: kMin, interp: Lerp})
	add(&Aggregator{name: "max", kind: kMax, interp: Lerp})
	add(&Aggregator{name: "mimmin", kind: kMin, interp: MaxIfMissing})
	add(&Aggregator{name: "mimmax", kind: kMax, interp: MinIfMissing})
	add(&Aggregator{name: "avg", kind: kAvg, interp: Lerp})
	add(&Aggregator{name: "median", kind: kMedian, interp: Lerp})
	add(&Aggregator{name: "dev", kind: kDev, interp: Lerp})
	add(&Aggregator{name: "count", kind: kCount, interp: ZeroIfMissing})
	add(&Aggregator{name: "first", kind: kFirst, interp: ZeroIfMissing})
	add(&Aggregator{name: "last", kind: kLast, interp: ZeroIfMissing})
	add(&Aggregator{name: "diff", kind: kDiff, interp: Lerp})
	add(&Aggregator{name: "mult", kind: kMult, interp: Lerp})
	add(&Aggregator{name: "squareSum", kind: kSquareSum, interp: ZeroIfMissing})
	add(&Aggregator{name: "none", kind: kNone, interp: ZeroIfMissing})
	for _, p := range []struct {
		suffix string
		pct    float64
	}{{"50", 50}, {"75", 75}, {"90", 90}, {"95", 95}, {"99", 99}, {"999", 99.9}} {
		add(&Aggregator{name: "p" + p.suffix, kind: kPercentile, interp: Lerp, pct: p.pct, est: estLegacy})
		add(&Aggregator{name: "ep" + p.suffix + "r3", kind: kPercentile, interp: Lerp, pct: p.pct, est: estR3})
		add(&Aggregator{name: "ep" + p.suffix + "r7", kind: kPercentile, interp: Lerp, pct: p.pct, est: estR7})
	}
	return m
}()

// sortedNames is computed once; Names hands out copies.
var sortedNames = func() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}()

// Lookup returns the aggregator with the given name. Names are
// case-sensitive ("squareSum", not "squaresum"). An unknown name gives an
// *UnknownAggregatorError, which wraps ErrUnknownAggregator.
func Lookup(name string) (*Aggregator, error) {
	if a, ok := registry[name]; ok {
		return a, nil
	}
	return nil, &UnknownAggregatorError{Name: name}
}

// Names returns the names of all aggregators, sorted; the caller may modify
// the slice. This is the list /api/aggregators serves.
func Names() []string {
	return append([]string(nil), sortedNames...)
}
