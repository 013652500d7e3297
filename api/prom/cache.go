package prom

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// SeriesCache remembers the series decoders have found valid, keyed by the
// bytes that carried their labels: a 1.0 TimeSeries' label fields as sent,
// a 2.0 series' labels resolved against the request's symbols and written
// the same way (Label messages). A series sent again costs one lookup: no
// label parsing, sorting or UTF-8 check, and the caller's ref (SetRef)
// spares it its own work. Entries depend on nothing but the key and the
// decoder's MaxLabels. Bounded in entries and bytes (NewSeriesCacheSized;
// by default SeriesCacheMaxEntries, SeriesCacheMaxBytes), in shards: a full
// shard starts again empty (Resets counts it). Safe for concurrent use: the
// decoders of concurrent requests share one.
type SeriesCache struct {
	seed                  maphash.Seed
	shardEntries, shardBy int // the bounds of one shard
	resets                atomic.Int64
	shards                [seriesCacheShards]cacheShard
}

type cacheShard struct {
	mu        sync.RWMutex
	m         map[string]*cacheEntry
	bytes     int
	maxLabels int // the MaxLabels the entries were validated under
	_         [64]byte
}

type cacheEntry struct {
	labels    []Label // sorted, aliasing the key; never changed once published
	metric    string
	key       string              // as in the map
	maxLabels int                 // the MaxLabels it was validated under
	ref       atomic.Pointer[any] // the caller's, see Series.SetRef
	// next is the entry a decoder looked up after this one last time
	// (senders repeat their series in the same order): Decoder.lookup
	// tries it first, comparing keys instead of hashing, locking a shard
	// and probing its map. gone is set when the entry's shard forgets it;
	// a gone entry is never predicted and its next is cleared, so what
	// next pointers keep alive is bounded by the live entries.
	next atomic.Pointer[cacheEntry]
	gone atomic.Bool
}

// The default bounds of a SeriesCache, and its fixed ones.
const (
	SeriesCacheMaxEntries = 1 << 17
	SeriesCacheMaxBytes   = 32 << 20
	seriesCacheShards     = 16
	seriesCacheMaxKey     = 4 << 10 // longer keys are not remembered
	seriesCacheOverhead   = 64      // bytes counted per entry for the map itself
)

// NewSeriesCache returns an empty cache of the default bounds.
func NewSeriesCache() *SeriesCache {
	return NewSeriesCacheSized(SeriesCacheMaxEntries, SeriesCacheMaxBytes)
}

// NewSeriesCacheSized returns an empty cache of at most maxEntries series
// and maxBytes bytes (a default for a bound not positive), split over its
// shards.
func NewSeriesCacheSized(maxEntries, maxBytes int) *SeriesCache {
	if maxEntries <= 0 {
		maxEntries = SeriesCacheMaxEntries
	}
	if maxBytes <= 0 {
		maxBytes = SeriesCacheMaxBytes
	}
	return &SeriesCache{seed: maphash.MakeSeed(),
		shardEntries: max(1, maxEntries/seriesCacheShards), shardBy: max(1, maxBytes/seriesCacheShards)}
}

// Resets counts the times a full shard was emptied to take a new series.
func (c *SeriesCache) Resets() int64 { return c.resets.Load() }

func (c *SeriesCache) shard(key []byte) *cacheShard {
	return &c.shards[maphash.Bytes(c.seed, key)%seriesCacheShards]
}

// get returns the entry of key, nil if there is none.
func (c *SeriesCache) get(key []byte, maxLabels int) *cacheEntry {
	sh := c.shard(key)
	sh.mu.RLock()
	var e *cacheEntry
	if sh.maxLabels == maxLabels {
		e = sh.m[string(key)]
	}
	sh.mu.RUnlock()
	return e
}

// put remembers labels (which alias key) under key and returns the entry,
// nil for a key too long to be kept.
func (c *SeriesCache) put(key string, maxLabels int, labels []Label, metric string) *cacheEntry {
	if len(key) > seriesCacheMaxKey {
		return nil
	}
	// The caller's ref (its name of the series) is about as long as the key.
	size := 2*len(key) + len(labels)*int(unsafe.Sizeof(Label{})) + seriesCacheOverhead
	e := &cacheEntry{labels: slices.Clone(labels), metric: metric, key: key, maxLabels: maxLabels}
	sh := c.shard(unsafe.Slice(unsafe.StringData(key), len(key)))
	sh.mu.Lock()
	full := sh.m != nil && (len(sh.m) >= c.shardEntries || sh.bytes+size > c.shardBy)
	if sh.m == nil || sh.maxLabels != maxLabels || full {
		if full {
			c.resets.Add(1)
		}
		for _, old := range sh.m {
			old.gone.Store(true)
			old.next.Store(nil)
		}
		sh.m, sh.bytes, sh.maxLabels = make(map[string]*cacheEntry, min(256, c.shardEntries)), 0, maxLabels
	}
	sh.m[key] = e
	sh.bytes += size
	sh.mu.Unlock()
	return e
}

// appendLabelField appends a Label message field (field 1, as in a 1.0
// TimeSeries) of name and value to b: the key of a 2.0 series.
func appendLabelField(b []byte, name, value string) []byte {
	if n := 4 + len(name) + len(value); n < 0x80 { // every length one byte
		b = append(b, 1<<3|wireLen, byte(n), 1<<3|wireLen, byte(len(name)))
		b = append(b, name...)
		b = append(b, 2<<3|wireLen, byte(len(value)))
		return append(b, value...)
	}
	n := 1 + uvarintLen(len(name)) + len(name) + 1 + uvarintLen(len(value)) + len(value)
	b = append(b, 1<<3|wireLen)
	b = binary.AppendUvarint(b, uint64(n))
	b = append(b, 1<<3|wireLen)
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = append(b, 2<<3|wireLen)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// keyed finishes s from d.key, the bytes of its labels as Label fields:
// from d.Cache if the key is known, else parsed, validated and, if
// valid, remembered. It returns whether s came from the cache.
func (d *Decoder) keyed(s *Series) bool {
	if e := d.lookup(); e != nil {
		s.Labels, s.Metric, s.nLabels, s.entry = e.labels, e.metric, len(e.labels), e
		return true
	}
	key := string(d.key) // the labels alias it: it outlives the body
	d.addKeyLabels(s, unsafe.Slice(unsafe.StringData(key), len(key)))
	d.finish(s)
	if s.Err == nil {
		if s.entry = d.Cache.put(key, d.MaxLabels, d.labels, s.Metric); s.entry != nil {
			d.follow(s.entry)
		}
	}
	return false
}

// addKeyLabels adds the labels of kb, Label fields (a cache key), to s.
func (d *Decoder) addKeyLabels(s *Series, kb []byte) {
	for off := 0; off < len(kb); {
		_, typ, next := field(kb, off)
		start, end := lenField(kb, next)
		if typ != wireLen { // never: the key holds Label fields only
			break
		}
		off = end
		name, value := parseLabel(kb[start:end])
		d.addLabel(s, name, value)
	}
}

// lookup returns the cache's entry of d.key, nil if there is none: first
// the entry that followed the previous series' last time, then the map.
func (d *Decoder) lookup() *cacheEntry {
	if p := d.prev; p != nil {
		if n := p.next.Load(); n != nil && n.maxLabels == d.MaxLabels && n.key == string(d.key) && !n.gone.Load() {
			d.prev = n
			return n
		}
	}
	e := d.Cache.get(d.key, d.MaxLabels)
	if e != nil {
		d.follow(e)
	}
	return e
}

// follow records that e came after the previous series of the request.
func (d *Decoder) follow(e *cacheEntry) {
	if p := d.prev; p != nil && !p.gone.Load() && p.next.Load() != e {
		p.next.Store(e)
	}
	d.prev = e
}

// Ref returns what SetRef attached to the series, nil if nothing was (or
// the decoder does not remember the series).
func (s *Series) Ref() any {
	if s.entry == nil {
		return nil
	}
	if p := s.entry.ref.Load(); p != nil {
		return *p
	}
	return nil
}

// SetRef attaches v to the series (its labels, exactly as sent), for as
// long as the decoder remembers it: Ref returns it for every later series
// sent with the same labels. A caller keeps there what it derived from the
// labels alone (its name of the series), so that a series seen before costs
// it nothing either. Only a valid series can hold a ref.
func (s *Series) SetRef(v any) {
	if s.entry != nil {
		s.entry.ref.Store(&v)
	}
}
