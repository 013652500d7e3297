package opentsdb

import (
	"bytes"
	"strconv"

	"hourglass/chunk"
	"hourglass/internal/quote"
)

// Telnet commands, as OpenTSDB registers them.
const (
	CmdPut        = "put"
	CmdStats      = "stats"
	CmdVersion    = "version"
	CmdHelp       = "help"
	CmdDropCaches = "dropcaches"
	CmdExit       = "exit"
)

// trimEOL drops one trailing "\n" or "\r\n", and a trailing "\r" left by a
// framer that split on "\n" alone.
func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

// nextWord returns the next space-separated word of line at or after i, and
// the index after it; runs of spaces separate words like one space.
func nextWord(line []byte, i int) (word []byte, next int) {
	for i < len(line) && line[i] == ' ' {
		i++
	}
	start := i
	for i < len(line) && line[i] != ' ' {
		i++
	}
	return line[start:i], i
}

// SplitCommand splits a telnet line into its command and arguments. A
// trailing "\n" or "\r\n" is dropped and runs of spaces count as one
// separator (OpenTSDB splits on each space; hourglass is lenient here). cmd
// is "" for a blank line, which a handler may ignore. The arguments alias
// line. Commands are case-sensitive, as in OpenTSDB: reply
// UnknownCommand(cmd) to anything but the Cmd* constants.
func SplitCommand(line []byte) (cmd string, args [][]byte) {
	line = trimEOL(line)
	w, i := nextWord(line, 0)
	cmd = commandName(w)
	for {
		var a []byte
		a, i = nextWord(line, i)
		if len(a) == 0 {
			return cmd, args
		}
		args = append(args, a)
	}
}

// Command returns the command of a telnet line, as SplitCommand does,
// without splitting its arguments: it allocates nothing for the Cmd*
// commands, so a handler can dispatch each line for free.
func Command(line []byte) string {
	w, _ := nextWord(trimEOL(line), 0)
	return commandName(w)
}

// commandName returns w as a string, without allocating for known commands.
func commandName(w []byte) string {
	switch string(w) {
	case CmdPut:
		return CmdPut
	case CmdStats:
		return CmdStats
	case CmdVersion:
		return CmdVersion
	case CmdHelp:
		return CmdHelp
	case CmdDropCaches:
		return CmdDropCaches
	case CmdExit:
		return CmdExit
	}
	return string(w)
}

// LineParser parses telnet put lines, interning names like PutDecoder. The
// zero value is ready to use with default Limits. Not safe for concurrent
// use: keep one per connection.
type LineParser struct {
	Limits Limits
	intern interner
	series seriesCache // by the metric and tags words of a line
	key    []byte
	last   *seriesEntry // the series of the line last accepted, if remembered
	// refOnly: the line being parsed (ParseKnown) leaves dp.Tags empty
	// when its series is remembered with a ref.
	refOnly bool
	stats   CacheStats
}

// CacheStats counts the lookups of a parser's cache of series: a put line
// whose series it remembered (Hits), one it parsed the long way and
// remembered then (Misses), and the times it forgot every series because
// the cache was full (Resets; its bound: seriesCacheMaxEntries and
// seriesCacheMaxBytes).
type CacheStats struct {
	Hits, Misses, Resets uint64
}

// CacheStats returns the counts since the parser was made.
func (p *LineParser) CacheStats() CacheStats {
	st := p.stats
	st.Resets = p.series.resets
	return st
}

// ParseKnown is Parse for a handler that keeps its own form of each series
// (SetRef): when the line's series is remembered with a ref, it returns
// that ref, and dp holds the line's metric, timestamp and value but no
// tags (the ref stands for the series; copying its tags cost a tenth of a
// telnet connection's parse). Otherwise it is Parse, and ref is nil. The
// error is Parse's.
func (p *LineParser) ParseKnown(line []byte, dp *DataPoint) (ref any, err error) {
	p.refOnly = true
	err = p.Parse(line, dp)
	p.refOnly = false
	if err != nil {
		return nil, err
	}
	return p.Ref(), nil
}

// Ref returns what SetRef attached to the series of the line Parse last
// accepted, or nil: nothing was attached, the parser had forgotten the
// series, or the line was rejected.
func (p *LineParser) Ref() any {
	if p.last == nil {
		return nil
	}
	return p.last.ref
}

// SetRef attaches v to the series (the metric and the tags, exactly as
// written) of the line Parse last accepted, for as long as the parser
// remembers that series; Ref returns it for every later line of the series.
// A handler keeps there its own form of the series (the storage's name for
// it, say), so a series sent again costs one lookup in all. It does nothing
// after a rejected line, or when the parser does not remember series
// (ParsePutLine).
func (p *LineParser) SetRef(v any) {
	if p.last != nil {
		p.last.ref = v
	}
}

// ParsePutLine parses one telnet put line; see LineParser.Parse. It does not
// intern names: for a stream of lines, keep a LineParser per connection.
func ParsePutLine(line []byte, l Limits, dp *DataPoint) error {
	p := LineParser{Limits: l, intern: interner{off: true}}
	return p.Parse(line, dp)
}

// Parse parses "put <metric> <timestamp> <value> <tagk=tagv> [...]" into dp
// (whose Tags slice is reused). A trailing "\n" or "\r\n" is dropped, and
// runs of spaces separate words like one space. The timestamp is seconds or
// milliseconds by the rule of ParsePut; a dot in it is removed, so
// "1364410924.250" is 1364410924250 ms (OpenTSDB's rule: always send three
// digits after the dot). The value is read as in ParsePut. The line is read
// as UTF-8 (OpenTSDB reads ISO-8859-1).
//
// On error it returns a *LineError whose text is OpenTSDB's reply line, in
// OpenTSDB's order of checks:
//
//	put: illegal argument: not enough arguments (need least 4, got 1)
//	put: invalid value: Invalid character 'n' in notatime     (timestamp)
//	put: illegal argument: invalid timestamp: 0
//	put: illegal argument: invalid tag: foo
//	put: illegal argument: duplicate tag: host=b, tags={host=a}
//	put: invalid value: Invalid character 'x' in 12x           (value)
//	put: illegal argument: <a DataPoint.Validate message>
//
// A line whose first word is not "put" gets UnknownCommand's text.
func (p *LineParser) Parse(line []byte, dp *DataPoint) error {
	line = trimEOL(line)
	p.last = nil
	if !p.intern.off {
		if e := p.series.predicted(p.Limits); e != nil {
			if ok, err := p.parsePredicted(line, e, dp); ok {
				return err
			}
		}
	}
	cmd, i := nextWord(line, 0)
	if string(cmd) != CmdPut {
		return &LineError{Reply: UnknownCommand(string(cmd))}
	}
	maxLen := p.Limits.maxNameLen()
	dp.Metric, dp.Timestamp, dp.Value, dp.Tags = "", 0, chunk.Value{}, dp.Tags[:0]

	var words [3][]byte
	for n := range words {
		words[n], i = nextWord(line, i)
		if len(words[n]) == 0 {
			return lineErr("illegal argument", "not enough arguments (need least 4, got "+strconv.Itoa(n)+")")
		}
	}
	tagsAt := i
	for i < len(line) && line[i] == ' ' {
		i++
	}
	if i == len(line) { // no fourth word
		return lineErr("illegal argument", "not enough arguments (need least 4, got 3)")
	}

	ts, err := parseLineTimestamp(words[1])
	if err != nil {
		return err
	}

	// A series seen before, with the same bytes, is known to be valid.
	// The key is the metric, a space and the tags as written: the entry
	// that came next last time is compared with the line's own bytes, the
	// key is built only to look further.
	var cached *seriesEntry
	if !p.intern.off {
		if cached = p.series.predictLine(words[0], line[tagsAt:], p.Limits); cached == nil {
			p.key = append(append(append(p.key[:0], words[0]...), ' '), line[tagsAt:]...)
			cached = p.series.get(p.key, p.Limits)
		}
	}
	if cached != nil {
		p.stats.Hits++
		return p.known(cached, ts, words[2], dp)
	}

	metric, namesValid := p.intern.get(words[0], maxLen)
	maxTags := p.Limits.maxTags()
	for i = tagsAt; ; {
		var w []byte
		w, i = nextWord(line, i)
		if len(w) == 0 {
			break
		}
		if len(dp.Tags) > maxTags {
			// The cheap limit first: the duplicate check below is linear
			// in the tags kept, so it never runs past the limit.
			n := len(dp.Tags) + 1
			for w, i = nextWord(line, i); len(w) > 0; w, i = nextWord(line, i) {
				n++
			}
			return lineErr("illegal argument", "Too many tags: "+strconv.Itoa(n)+" maximum allowed: "+
				strconv.Itoa(maxTags)+", tags: "+formatTags(dp.Tags))
		}
		eq := -1
		for j, c := range w {
			if c == '=' {
				if eq >= 0 {
					eq = -2 // OpenTSDB splits on every '=': two of them is an error
					break
				}
				eq = j
			}
		}
		if eq <= 0 || eq == len(w)-1 {
			return lineErr("illegal argument", "invalid tag: "+quote.Bytes(w))
		}
		k, kv := p.intern.get(w[:eq], maxLen)
		v, vv := p.intern.get(w[eq+1:], maxLen)
		dup := false
		for _, t := range dp.Tags {
			if t.Key == k {
				if t.Value != v {
					return lineErr("illegal argument", "duplicate tag: "+quote.Bytes(w)+", tags="+formatTags(dp.Tags))
				}
				dup = true
				break
			}
		}
		if !dup {
			dp.Tags = append(dp.Tags, Tag{Key: k, Value: v})
			namesValid = namesValid && kv && vv
		}
	}

	v, msg := parseValue(words[2])
	if msg != "" {
		return lineErr("invalid value", msg)
	}
	dp.Metric, dp.Timestamp, dp.Value = metric, TimestampMillis(ts), v
	if err := dp.validateRest(p.Limits, namesValid); err != nil {
		return lineErr("illegal argument", err.(*PointError).Message)
	}
	if !p.intern.off {
		p.stats.Misses++
		p.last = p.series.put(p.key, p.Limits, metric, dp.Tags, true)
	}
	return nil
}

// parsePredicted parses line the short way if it is a put of e's series,
// the one that came next last time, written as it was then: "put ", e's
// metric, a timestamp and a value, and then the bytes of e's tags. ok is
// false for any other line, which Parse reads the long way; a line it
// takes gets the answer the long way would give.
func (p *LineParser) parsePredicted(line []byte, e *seriesEntry, dp *DataPoint) (ok bool, err error) {
	n := len(e.metric)
	if len(line) <= 4+n || len(e.key) <= n || line[4+n] != ' ' || string(line[:4]) != "put " || string(line[4:4+n]) != e.metric {
		return false, nil
	}
	tsText, i := nextWord(line, 4+n)
	value, i := nextWord(line, i)
	if len(value) == 0 || string(line[i:]) != e.key[n+1:] {
		return false, nil
	}
	dp.Metric, dp.Timestamp, dp.Value, dp.Tags = "", 0, chunk.Value{}, dp.Tags[:0]
	ts, err := parseLineTimestamp(tsText)
	if err != nil {
		return true, err
	}
	p.series.prev = e
	p.stats.Hits++
	return true, p.known(e, ts, value, dp)
}

// known finishes a line of the remembered series e: its timestamp ts (in
// the line's unit) parsed, its value still text.
func (p *LineParser) known(e *seriesEntry, ts int64, value []byte, dp *DataPoint) error {
	refOnly := p.refOnly && e.ref != nil // ParseKnown: no tags unless an error names them
	if !refOnly {
		dp.Tags = append(dp.Tags, e.tags...)
	}
	v, msg := parseValue(value)
	if msg != "" {
		return lineErr("invalid value", msg)
	}
	dp.Metric, dp.Timestamp, dp.Value = e.metric, TimestampMillis(ts), v
	if err := dp.validateValue(); err != nil {
		if refOnly {
			dp.Tags = append(dp.Tags, e.tags...)
			err = dp.validateValue()
		}
		return lineErr("illegal argument", err.(*PointError).Message)
	}
	p.last = e
	return nil
}

// parseLineTimestamp parses a put line's timestamp word: seconds or
// milliseconds, a dot in it removed.
func parseLineTimestamp(tsText []byte) (int64, error) {
	if n := len(tsText); n > 0 && n <= 18 {
		// Digits alone, as nearly every line sends them: parseLong's
		// answer without its checks.
		var ts int64
		for _, c := range tsText {
			if c < '0' || c > '9' {
				ts = -1
				break
			}
			ts = ts*10 + int64(c-'0')
		}
		if ts > 0 {
			return ts, nil
		}
	}
	return parseLineTimestampLong(tsText)
}

// parseLineTimestampLong is parseLineTimestamp without its shortcut.
func parseLineTimestampLong(tsText []byte) (int64, error) {
	if bytes.IndexByte(tsText, '.') >= 0 {
		tsText = removeDots(tsText)
	}
	ts, msg := parseLong(tsText)
	if msg != "" {
		return 0, lineErr("invalid value", msg)
	}
	if ts <= 0 {
		return 0, lineErr("illegal argument", "invalid timestamp: "+strconv.FormatInt(ts, 10))
	}
	return ts, nil
}

func removeDots(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c != '.' {
			out = append(out, c)
		}
	}
	return out
}
