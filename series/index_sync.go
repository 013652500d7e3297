package series

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/store"
)

// Index sync: how nodes that share one store learn the series and days the
// others add to the index.
//
// Each node holds the whole series index in memory, loaded from the index
// table at start (Index.load). A node sharing its store with others (on
// Bigtable) also needs what they add later: a series created on node B,
// and a day in which B wrote a series A already knew, since queries visit
// a series only on days the index says it had data. So every index change
// a node persists is first announced in its own feed, rows of the meta
// table that the other nodes tail:
//
//	row       'x' | writer id [2, BE] | seq [8, BE]
//	qualifier TSUID | day [4, BE]     (one cell per series and day announced)
//	value     Labels of the series if it is new; empty for a new day of a
//	          series the index already held (most announcements: every
//	          active series gets a new day at midnight UTC)
//
// A reader that meets a new day of a series it does not know reads the
// series' labels from its index row.
//
// seq increases with every feed row a writer writes: it is the wall clock
// in microseconds, or the previous seq + 1 if that is larger, and at start
// a writer begins above the largest seq it finds of its own. A writer
// writes its feed rows one at a time, under a lock, each only after the
// previous one returned: when a reader sees seq n of a writer, it can
// already see every row of that writer below n (the store orders every
// operation with every other). A reader therefore keeps one cursor per
// writer, the last seq it applied, and reads only the rows after it: one
// Scan per interval with one range per writer after its cursor plus the
// gaps between known writers (where new writers appear). Most reads return
// nothing.
//
// A change goes to the feed before the index row, so a node that starts
// between the two (its load misses the index row) finds it in the feed:
// at start a node loads the index, then reads the whole retained feed.
// Feed rows older than IndexSyncOptions.Retention (default 1 h) are
// deleted by the writer that wrote them. A node whose reads failed for
// longer than half the retention may have missed rows deleted meanwhile:
// it reads the whole index table again, merging it into what it holds.
// Applying a change is idempotent, so reading a row twice is harmless.
//
// A node alone (the embedded store) runs none of this: with
// IndexSyncOptions.Interval zero no feed is written or read.

// DefaultIndexSyncOptions returns the index sync's settings when it is on
// (-storage=bigtable): the feeds read every second, feed rows kept an hour.
func DefaultIndexSyncOptions() IndexSyncOptions {
	return IndexSyncOptions{Interval: time.Second, Retention: time.Hour}
}

// IndexSyncOptions configures the index sync. The zero value turns it off.
type IndexSyncOptions struct {
	// Interval is how often the feeds of the other nodes are read. Zero:
	// no sync (one node).
	Interval time.Duration
	// Retention is how long feed rows are kept. Default 1 h.
	Retention time.Duration
}

const (
	feedPrefix = 'x'
	// feedRowCells bounds the cells of one feed row.
	feedRowCells = 10000
	// feedRowLen is the length of a feed row key.
	feedRowLen = 1 + 2 + 8
)

func feedWriterPrefix(writer uint16) []byte {
	return binary.BigEndian.AppendUint16([]byte{feedPrefix}, writer)
}

func feedRow(writer uint16, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(feedWriterPrefix(writer), seq)
}

// indexSync publishes this node's index changes and applies the other
// nodes'. publish may be called concurrently; tail and collect only from
// one goroutine at a time.
type indexSync struct {
	st     store.Store
	ix     *Index
	salt   func([]byte) byte
	check  func([]byte) error
	writer uint16
	opts   IndexSyncOptions
	now    func() time.Time
	log    *slog.Logger

	mu      sync.Mutex // serialises publish: one feed row at a time, in seq order
	lastSeq uint64     // guarded by mu

	cursors     map[uint16]uint64 // last seq applied, per other writer
	started     bool              // the first, full read of the feed is done
	lastSuccess time.Time
	lastGC      time.Time

	learnedSeries prometheus.Counter
	learnedDays   prometheus.Counter
	errors        prometheus.Counter
}

func newIndexSync(st store.Store, idx *Index, opts Options) *indexSync {
	o := opts.IndexSync
	if o.Retention <= 0 {
		o.Retention = DefaultIndexSyncOptions().Retention
	}
	s := &indexSync{
		st:      st,
		ix:      idx,
		salt:    opts.Layout.Salt,
		check:   opts.Layout.CheckTSUID,
		writer:  opts.WriterID,
		opts:    o,
		now:     opts.Now,
		log:     opts.Logger,
		cursors: map[uint16]uint64{},
		learnedSeries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_index_sync_series_total", Help: "Series learned from the index feeds of other nodes."}),
		learnedDays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_index_sync_days_total", Help: "Series days learned from the index feeds of other nodes."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_index_sync_errors_total", Help: "Failed reads of the index feeds of other nodes (retried)."}),
	}
	if r := opts.Registerer; r != nil {
		r.MustRegister(s.learnedSeries, s.learnedDays, s.errors)
	}
	return s
}

// loop reads the feeds every interval until stop closes.
func (s *indexSync) loop(stop <-chan struct{}) {
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 5*s.opts.Interval+time.Minute)
			err := s.step(ctx)
			cancel()
			switch {
			case err != nil && !failing:
				s.log.Warn("reading the index feeds of other nodes failed; retrying every interval", "err", err)
			case err != nil:
				s.log.Debug("reading the index feeds of other nodes failed again", "err", err)
			case failing:
				s.log.Info("reading the index feeds of other nodes works again")
			}
			if err != nil {
				s.errors.Inc()
			}
			failing = err != nil
		}
	}
}

// publish writes the feed rows announcing idx: one cell per series day,
// with the series' labels if idx creates the series.
func (s *indexSync) publish(ctx context.Context, idx []store.Mutation) error {
	labels := map[string]Labels{}
	for _, m := range idx {
		if string(m.Qualifier) == string(qualLabels) && !m.Delete {
			labels[string(m.Row)] = Labels(m.Value)
		}
	}
	var cells []store.Mutation
	for _, m := range idx {
		if len(m.Qualifier) != 5 || m.Qualifier[0] != 'd' || m.Delete {
			continue
		}
		q := make([]byte, 0, len(m.Row)+4)
		q = append(append(q, m.Row...), m.Qualifier[1:]...)
		cells = append(cells, store.Mutation{Qualifier: q, Value: []byte(labels[string(m.Row)])})
	}
	if len(cells) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(cells) > 0 {
		n := min(len(cells), feedRowCells)
		s.lastSeq = max(s.lastSeq+1, uint64(s.now().UnixMicro()))
		row := feedRow(s.writer, s.lastSeq)
		for i := range cells[:n] {
			cells[i].Row = row
		}
		// One row per Write: the rows of one call may become visible in
		// any order, and readers rely on seq order.
		if err := s.st.Write(ctx, store.TableMeta, cells[:n]); err != nil {
			return fmt.Errorf("series: announcing index changes: %w", err)
		}
		cells = cells[n:]
	}
	return nil
}

// step is one round of the loop: read the feeds, fall back to reading the
// whole index if the feeds may have lost rows meanwhile, delete own feed
// rows past the retention now and then.
func (s *indexSync) step(ctx context.Context) error {
	now := s.now()
	if !s.lastSuccess.IsZero() && now.Sub(s.lastSuccess) > s.opts.Retention/2 {
		if err := s.rescan(ctx); err != nil {
			return err
		}
	}
	if err := s.tail(ctx); err != nil {
		return err
	}
	s.lastSuccess = now
	if now.Sub(s.lastGC) >= s.opts.Retention/6 {
		cutoff := uint64(now.Add(-s.opts.Retention).UnixMicro())
		r := store.KeyRange{Start: feedWriterPrefix(s.writer), End: feedRow(s.writer, cutoff)}
		if err := s.st.DeleteRange(ctx, store.TableMeta, r); err != nil {
			return fmt.Errorf("series: deleting old index feed rows: %w", err)
		}
		s.lastGC = now
	}
	return nil
}

// ranges returns what tail reads: each known writer's rows after its
// cursor, and every writer not known yet. Before the first read, the whole
// feed, this node's rows included (to find its largest seq).
func (s *indexSync) ranges() []store.KeyRange {
	writers := make([]uint16, 0, len(s.cursors)+1)
	for w := range s.cursors {
		writers = append(writers, w)
	}
	if s.started {
		writers = append(writers, s.writer)
	}
	slices.Sort(writers)
	var rs []store.KeyRange
	start := []byte{feedPrefix}
	for _, w := range writers {
		wp := feedWriterPrefix(w)
		rs = append(rs, store.KeyRange{Start: start, End: wp})
		if w == s.writer {
			start = store.PrefixEnd(wp)
		} else {
			start = feedRow(w, s.cursors[w]+1)
		}
	}
	return append(rs, store.KeyRange{Start: start, End: []byte{feedPrefix + 1}})
}

// tail reads the feed rows after the cursors and applies them.
func (s *indexSync) tail(ctx context.Context) error {
	seen := map[uint16]uint64{}
	unknown := map[string][]uint32{} // new days of series not held: TSUID → days
	var series, days int
	err := s.st.Scan(ctx, store.TableMeta, s.ranges(), func(c store.Cell) bool {
		if len(c.Row) != feedRowLen || c.Row[0] != feedPrefix {
			return true
		}
		w := binary.BigEndian.Uint16(c.Row[1:3])
		seen[w] = max(seen[w], binary.BigEndian.Uint64(c.Row[3:]))
		if w == s.writer {
			return true // our own rows: read only at start, for their seq
		}
		ns, nd, held := s.apply(c.Qualifier, c.Value)
		series += ns
		days += nd
		if !held {
			tsuid := c.Qualifier[:len(c.Qualifier)-4]
			unknown[string(tsuid)] = append(unknown[string(tsuid)], binary.BigEndian.Uint32(c.Qualifier[len(c.Qualifier)-4:]))
		}
		return true
	})
	if err == nil {
		for tsuid, ds := range unknown {
			var ns, nd int
			if ns, nd, err = s.fromIndexRow(ctx, []byte(tsuid), ds); err != nil {
				break
			}
			series += ns
			days += nd
		}
	}
	s.learnedSeries.Add(float64(series))
	s.learnedDays.Add(float64(days))
	if err != nil {
		return fmt.Errorf("series: reading the index feeds: %w", err)
	}
	for w, seq := range seen {
		if w == s.writer {
			s.mu.Lock()
			s.lastSeq = max(s.lastSeq, seq)
			s.mu.Unlock()
			continue
		}
		s.cursors[w] = max(s.cursors[w], seq)
	}
	s.started = true
	return nil
}

// apply merges one feed cell into the index and reports what was new. held
// is false for a cell without labels of a series the index does not hold.
func (s *indexSync) apply(qualifier, value []byte) (newSeries, newDays int, held bool) {
	if len(qualifier) < 4 {
		return 0, 0, true
	}
	tsuid := qualifier[:len(qualifier)-4]
	day := binary.BigEndian.Uint32(qualifier[len(qualifier)-4:])
	if s.check(tsuid) != nil {
		return 0, 0, true // not ours to understand: skip it
	}
	if len(value) == 0 {
		held, newDays = s.ix.addHeldDay(tsuid, day)
		return 0, newDays, held
	}
	l := Labels(value)
	if !l.Valid() {
		return 0, 0, true
	}
	newSeries, newDays = s.ix.merge(l, tsuid, s.salt, day)
	return newSeries, newDays, true
}

// fromIndexRow merges days of a series this node does not hold, reading its
// labels from its index row (a series without one is skipped: its writer
// will write it, and announce it, when it comes back).
func (s *indexSync) fromIndexRow(ctx context.Context, tsuid []byte, days []uint32) (newSeries, newDays int, err error) {
	cells, err := s.st.ReadRow(ctx, store.TableIndex, tsuid)
	if err != nil {
		return 0, 0, err
	}
	for _, c := range cells {
		if string(c.Qualifier) != string(qualLabels) || !Labels(c.Value).Valid() {
			continue
		}
		for _, d := range days {
			ns, nd := s.ix.merge(Labels(c.Value), tsuid, s.salt, d)
			newSeries += ns
			newDays += nd
		}
	}
	return newSeries, newDays, nil
}

// rescan reads the whole index table and merges it into the index.
func (s *indexSync) rescan(ctx context.Context) error {
	var (
		cur    []byte
		labels Labels
		days   []uint32
		series int
	)
	finish := func() {
		if cur != nil && labels != "" && labels.Valid() && s.check(cur) == nil {
			for _, d := range days {
				ns, _ := s.ix.merge(labels, cur, s.salt, d)
				series += ns
			}
		}
		cur, labels, days = nil, "", days[:0]
	}
	err := s.st.Scan(ctx, store.TableIndex, []store.KeyRange{{Start: []byte{}}}, func(c store.Cell) bool {
		if !bytes.Equal(cur, c.Row) {
			finish()
			cur = append([]byte(nil), c.Row...)
		}
		switch {
		case string(c.Qualifier) == string(qualLabels):
			labels = Labels(c.Value)
		case len(c.Qualifier) == 5 && c.Qualifier[0] == 'd':
			days = append(days, binary.BigEndian.Uint32(c.Qualifier[1:]))
		}
		return true
	})
	finish()
	s.learnedSeries.Add(float64(series))
	if err != nil {
		return fmt.Errorf("series: reading the index again: %w", err)
	}
	return nil
}

// addHeldDay records a day of a series learned from another node, if the
// index holds the series; it persists nothing (that node did).
func (ix *Index) addHeldDay(tsuid []byte, day uint32) (held bool, newDays int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := ix.byTSUID[string(tsuid)]
	if e == nil {
		return false, 0
	}
	if e.AddDay(day) {
		newDays = 1
	}
	return true, newDays
}

// merge records a series (if new) and a day of it learned from another
// node, without persisting anything: that node did.
func (ix *Index) merge(l Labels, tsuid []byte, salt func([]byte) byte, day uint32) (newSeries, newDays int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := ix.byTSUID[string(tsuid)]
	if e == nil {
		t := append([]byte(nil), tsuid...)
		e = &Entry{Labels: l, TSUID: t, Salt: salt(t)}
		ix.insertLocked(e)
		newSeries = 1
	}
	if e.AddDay(day) {
		newDays = 1
	}
	return newSeries, newDays
}
