package opentsdb

// interner returns one string per distinct name, so the names of a stream of
// points cost one allocation each, not one per point. It also remembers
// whether each name is valid under the limit it was checked with, so the
// character check runs once per name. Not safe for concurrent use.
type interner struct {
	m      map[string]internEntry
	bytes  int
	maxLen int // the name length limit the valid flags were computed for
	// recent is a direct-mapped cache in front of m: most names repeat
	// within a body, and a hit costs a short hash and one comparison
	// instead of a map probe.
	recent *[internRecent]internEntry
	// off disables interning, for one-shot use where a table costs more
	// than it saves.
	off bool
}

const internRecent = 1024 // a power of two

type internEntry struct {
	s     string
	valid bool
}

// Bounds of the table: past them it starts afresh, so a stream of unique
// values (request ids as tag values) cannot make it grow without end.
const (
	internMaxEntries = 1 << 16
	internMaxBytes   = 8 << 20
	internMaxLen     = 1024 // longer strings are not interned
)

// get returns b as a string and whether it is a valid name under maxLen.
func (in *interner) get(b []byte, maxLen int) (string, bool) {
	if in.off || len(b) > internMaxLen {
		s := string(b)
		return s, validName(s, maxLen)
	}
	var slot *internEntry
	if in.m != nil && in.maxLen == maxLen {
		slot = &in.recent[recentHash(b)&(internRecent-1)]
		if slot.s == string(b) && slot.s != "" {
			return slot.s, slot.valid
		}
		if e, ok := in.m[string(b)]; ok {
			*slot = e
			return e.s, e.valid
		}
	}
	s := string(b)
	valid := validName(s, maxLen)
	if in.m == nil || in.maxLen != maxLen || len(in.m) >= internMaxEntries || in.bytes >= internMaxBytes {
		in.m = make(map[string]internEntry, 256)
		if in.recent == nil {
			in.recent = new([internRecent]internEntry)
		} else {
			*in.recent = [internRecent]internEntry{}
		}
		in.bytes = 0
		in.maxLen = maxLen
		slot = &in.recent[recentHash(b)&(internRecent-1)]
	}
	e := internEntry{s: s, valid: valid}
	in.m[s] = e
	*slot = e
	in.bytes += len(s)
	return s, valid
}

// recentHash is FNV-1a over the length and up to 16 bytes of b, its first
// and last 8: cheap, and good enough to spread names that differ in a
// number at either end.
func recentHash(b []byte) uint32 {
	h := uint32(2166136261) ^ uint32(len(b))
	h *= 16777619
	if len(b) <= 16 {
		for _, c := range b {
			h = (h ^ uint32(c)) * 16777619
		}
	} else {
		for _, c := range b[:8] {
			h = (h ^ uint32(c)) * 16777619
		}
		for _, c := range b[len(b)-8:] {
			h = (h ^ uint32(c)) * 16777619
		}
	}
	return h ^ h>>16
}

// seriesCache remembers the names of series that parsed and validated well,
// keyed by the bytes that carried them (a telnet line's metric and tags, an
// /api/put point's tags object), so a series sent again costs one lookup
// instead of a name-by-name parse and check. An entry holds only what
// depends on those bytes and the Limits: a hit may skip every check of the
// names. Bounded like the interner. Not safe for concurrent use.
//
// Clients send their series in the same order request after request (a
// collector's loop): each entry remembers the one looked up after it last
// time (next), and get tries that one first, a comparison of the key's
// bytes instead of hashing them and probing the map.
type seriesCache struct {
	m      map[string]*seriesEntry
	bytes  int
	limits Limits // the limits the entries were validated under
	gen    uint64 // bumped when m starts again: older entries are not predicted
	prev   *seriesEntry
	resets uint64 // times a full m started again
}

type seriesEntry struct {
	key    string         // as in the map
	gen    uint64         // the cache's gen when it was made
	next   *seriesEntry   // the entry looked up after this one last time
	metric string         // "" where the key holds the tags alone
	tags   []Tag          // decoded, a repeated pair collapsed, in the order sent
	valid  bool           // every name is valid (the /api/put tags cache keeps others too)
	tagsOK bool           // valid, and the tags pass validateSeries (/api/put)
	ref    any            // the caller's, see LineParser.SetRef
	refs   map[string]any // by metric, where the key holds the tags alone (PutDecoder.SetRef)
}

// The bounds of one cache (one telnet connection's, one /api/put
// decoder's). An entry of the load generator's series (a metric and five
// tags, ~100 bytes written) counts ~420 bytes: 4 MiB holds ~9,900 series,
// so a client sending its 5,000 series on one connection finds them all
// (at 2 MiB, ~4,950: it forgot them all every ~4,950 new lines and parsed
// every line the long way).
const (
	seriesCacheMaxEntries = 1 << 15
	seriesCacheMaxBytes   = 4 << 20
	seriesCacheOverhead   = 64 // bytes counted per entry for the map itself
)

// get returns the entry of key, nil if there is none.
func (c *seriesCache) get(key []byte, l Limits) *seriesEntry {
	if c.m == nil || c.limits != l {
		return nil
	}
	if p := c.prev; p != nil && p.next != nil && p.next.gen == c.gen && p.next.key == string(key) {
		c.prev = p.next
		return p.next
	}
	e := c.m[string(key)]
	if e != nil {
		c.follow(e)
	}
	return e
}

// predicted returns the entry that came after the previous one last time,
// nil if there is none or it is of older limits or an older generation.
func (c *seriesCache) predicted(l Limits) *seriesEntry {
	p := c.prev
	if p == nil || p.next == nil || p.next.gen != c.gen || c.m == nil || c.limits != l {
		return nil
	}
	return p.next
}

// predictLine returns the entry that came after the previous one last
// time if its key is metric, a space and tags, nil otherwise (get then
// looks the key up).
func (c *seriesCache) predictLine(metric, tags []byte, l Limits) *seriesEntry {
	p := c.prev
	if p == nil || p.next == nil || c.m == nil || c.limits != l {
		return nil
	}
	e := p.next
	k, n := e.key, len(metric)
	if e.gen != c.gen || len(k) != n+1+len(tags) || k[n] != ' ' || k[:n] != string(metric) || k[n+1:] != string(tags) {
		return nil
	}
	c.prev = e
	return e
}

// follow records that e was looked up (or added) after the previous one.
func (c *seriesCache) follow(e *seriesEntry) {
	if c.prev != nil && c.prev.gen == c.gen {
		c.prev.next = e
	}
	c.prev = e
}

// put remembers metric and a copy of tags under key, and returns the entry
// (nil for a key too long to be kept).
func (c *seriesCache) put(key []byte, l Limits, metric string, tags []Tag, valid bool) *seriesEntry {
	// The names are the interner's; a caller's ref (a storage name) is
	// about as long as the key.
	size := 2*len(key) + len(tags)*32 + seriesCacheOverhead
	if len(key) > internMaxLen {
		return nil
	}
	if c.m == nil || c.limits != l || len(c.m) >= seriesCacheMaxEntries || c.bytes+size > seriesCacheMaxBytes {
		if c.m != nil && c.limits == l {
			c.resets++
		}
		c.m, c.bytes, c.limits = make(map[string]*seriesEntry, 256), 0, l
		c.gen++
		c.prev = nil
	}
	k := string(key)
	e := &seriesEntry{key: k, gen: c.gen, metric: metric, tags: append([]Tag(nil), tags...), valid: valid}
	c.m[k] = e
	c.bytes += size
	c.follow(e)
	return e
}

// setRef attaches v to metric in e, an entry of c, within c's bound.
func (c *seriesCache) setRef(e *seriesEntry, metric string, v any) {
	size := len(metric) + seriesCacheOverhead
	if c.bytes+size > seriesCacheMaxBytes {
		return
	}
	if e.refs == nil {
		e.refs = make(map[string]any, 1)
	}
	if _, ok := e.refs[metric]; !ok {
		c.bytes += size
	}
	e.refs[metric] = v
}
