package model

import "time"

// Stats are figures for /api/stats and the status page.
type Stats struct {
	Series       int   // series in the head
	IndexSeries  int   // series in the index
	PointsInHead int   // points in open and sealed-but-unwritten chunks
	WALBytes     int64 // bytes of WAL on disk
}

// Stat is one figure of a cardinality list: a name and its count.
type Stat struct {
	Name  string
	Value uint64
}

// CardinalityStats are the figures of Prometheus' /api/v1/status/tsdb,
// computed from the series index: each list holds at most the limit asked
// for, the largest first (ties by name).
type CardinalityStats struct {
	NumSeries     uint64 // series in the index
	NumLabelPairs int    // distinct label name=value pairs, metric names included
	ChunkCount    int64  // chunks in the head: open, and sealed not yet in the store
	MinTime       int64  // the oldest point in the head (ms); math.MaxInt64 when it is empty
	MaxTime       int64  // the newest point in the head (ms); math.MinInt64 when it is empty

	SeriesCountByMetricName     []Stat // series per metric
	LabelValueCountByLabelName  []Stat // distinct values per label name (__name__: metrics)
	MemoryInBytesByLabelName    []Stat // bytes of the name and value of each label, summed over the series holding it
	SeriesCountByLabelValuePair []Stat // series per name=value pair
}

// SnapshotStats says what a snapshot holds.
type SnapshotStats struct {
	Cut         int   // the WAL segment started at the cut; the snapshot holds the segments before it
	WALSegments int   // WAL segments in the snapshot
	WALBytes    int64 // their bytes
	Took        time.Duration
}
