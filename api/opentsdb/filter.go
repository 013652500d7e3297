package opentsdb

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Tag value filter types (OpenTSDB's src/query/filter).
const (
	FilterLiteralOr     = "literal_or"
	FilterILiteralOr    = "iliteral_or"
	FilterNotLiteralOr  = "not_literal_or"
	FilterNotILiteralOr = "not_iliteral_or"
	FilterWildcard      = "wildcard"
	FilterIWildcard     = "iwildcard"
	FilterRegexp        = "regexp"
	FilterNotKey        = "not_key"
)

// Filter is one tag value filter of a sub-query, as sent: the filter type,
// the tag key it applies to, its expression (the part between the
// parentheses in "host=literal_or(web01|web02)") and whether the query
// groups by its key.
type Filter struct {
	Type    string
	TagK    string
	Expr    string
	GroupBy bool
}

// String returns the filter as OpenTSDB's echoed "tags" write it: type(expr).
func (f Filter) String() string { return f.Type + "(" + f.Expr + ")" }

// AppendJSON appends f as OpenTSDB serializes it in a showQuery echo:
// {"tagk":"host","filter":"web*","group_by":true,"type":"wildcard"}.
func (f Filter) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"tagk":`...)
	dst = appendString(dst, f.TagK)
	dst = append(dst, `,"filter":`...)
	dst = appendString(dst, f.Expr)
	dst = append(dst, `,"group_by":`...)
	dst = strconv.AppendBool(dst, f.GroupBy)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, f.Type)
	return append(dst, '}')
}

// MarshalJSON writes f as AppendJSON does.
func (f Filter) MarshalJSON() ([]byte, error) { return f.AppendJSON(nil), nil }

// ParseTagFilter converts one legacy tag pair (a sub-query's "tags" map, the
// braces of m=) to a filter, as OpenTSDB's TagVFilter.getFilter does:
//
//	k=*             wildcard(*)
//	k=v, k=v1|v2    literal_or(v1|v2)
//	k=va*           iwildcard(va*)   (OpenTSDB: a case-insensitive wildcard)
//	k=type(expr)    type(expr), the type name in any case
//
// The filter is checked as Compile does.
func ParseTagFilter(tagk, expr string, groupBy bool) (Filter, error) {
	if tagk == "" {
		return Filter{}, badRequest("Tagk cannot be null or empty")
	}
	if expr == "" {
		return Filter{}, badRequest("Filter cannot be null or empty")
	}
	f := Filter{TagK: tagk, GroupBy: groupBy}
	switch paren := strings.IndexByte(expr, '('); {
	case expr == "*":
		f.Type, f.Expr = FilterWildcard, "*"
	case paren >= 0:
		if expr[len(expr)-1] != ')' {
			return Filter{}, badRequest("Filter must end with a ')': " + expr)
		}
		f.Type, f.Expr = strings.ToLower(expr[:paren]), expr[paren+1:len(expr)-1]
	case strings.Contains(expr, "*"):
		f.Type, f.Expr = FilterIWildcard, expr
	default:
		f.Type, f.Expr = FilterLiteralOr, expr
	}
	if _, err := f.Compile(); err != nil {
		return Filter{}, err
	}
	return f, nil
}

// TagMatcher is a compiled Filter. It is immutable and safe for concurrent use.
type TagMatcher struct {
	f        Filter
	kind     matcherKind
	fold     bool                // compare lower-cased values
	negate   bool                // not_literal_or, not_iliteral_or
	literals []string            // literal_or family, lower-cased when fold
	set      map[string]struct{} // literals, when there are many
	any      bool                // wildcard(*): any value
	glob     []string            // wildcard parts between the stars, lower-cased when fold
	re       *regexp.Regexp
}

type matcherKind uint8

const (
	matchLiterals matcherKind = iota
	matchGlob
	matchRegexp
	matchNotKey
)

// Compile checks f and returns its matcher. Errors are *RequestError with
// OpenTSDB's messages: "The filter type cannot be null or empty", "The tagk
// cannot be null or empty", "Could not find a tag value filter of the type:
// x", "Filter cannot be null or empty", "Filter must contain more than just
// a pipe", "Filter must contain an asterisk", "The filter must be empty for
// the not_key filter", or the regular expression's error.
//
// regexp uses Go's RE2 syntax (https://github.com/google/re2/wiki/Syntax),
// not Java's: no backreferences or lookaround. As with Java's find(), the
// expression matches anywhere in the value unless anchored.
// wildcard is a glob anchored at both ends ("web*" matches "web01", not
// "xweb01"); OpenTSDB 2.4.1 anchors only globs that start or end with a
// star.
func (f Filter) Compile() (*TagMatcher, error) {
	if f.Type == "" {
		return nil, badRequest("The filter type cannot be null or empty")
	}
	if f.TagK == "" {
		return nil, badRequest("The tagk cannot be null or empty")
	}
	m := &TagMatcher{f: f}
	switch f.Type {
	case FilterLiteralOr, FilterILiteralOr, FilterNotLiteralOr, FilterNotILiteralOr:
		if f.Expr == "" {
			return nil, badRequest("Filter cannot be null or empty")
		}
		if f.Expr == "|" {
			return nil, badRequest("Filter must contain more than just a pipe")
		}
		m.kind = matchLiterals
		m.fold = f.Type == FilterILiteralOr || f.Type == FilterNotILiteralOr
		m.negate = f.Type == FilterNotLiteralOr || f.Type == FilterNotILiteralOr
		for _, l := range strings.Split(f.Expr, "|") {
			if m.fold {
				l = strings.ToLower(l)
			}
			if l != "" && !slices.Contains(m.literals, l) {
				m.literals = append(m.literals, l)
			}
		}
		if len(m.literals) > 8 {
			m.set = make(map[string]struct{}, len(m.literals))
			for _, l := range m.literals {
				m.set[l] = struct{}{}
			}
		}
	case FilterWildcard, FilterIWildcard:
		if f.Expr == "" {
			return nil, badRequest("Filter cannot be null or empty")
		}
		if !strings.Contains(f.Expr, "*") {
			return nil, badRequest("Filter must contain an asterisk")
		}
		m.kind = matchGlob
		m.fold = f.Type == FilterIWildcard
		expr := f.Expr
		if m.fold {
			expr = strings.ToLower(expr)
		}
		if strings.Trim(expr, "*") == "" {
			m.any = true
		} else {
			m.glob = strings.Split(expr, "*")
		}
	case FilterRegexp:
		if f.Expr == "" {
			return nil, badRequest("Filter cannot be null or empty")
		}
		re, err := regexp.Compile(f.Expr)
		if err != nil {
			return nil, badRequest(err.Error())
		}
		m.kind, m.re = matchRegexp, re
	case FilterNotKey:
		if f.Expr != "" {
			return nil, badRequest("The filter must be empty for the not_key filter")
		}
		m.kind = matchNotKey
	default:
		return nil, badRequest("Could not find a tag value filter of the type: " + f.Type)
	}
	return m, nil
}

// Filter returns the filter m was compiled from.
func (m *TagMatcher) Filter() Filter { return m.f }

// Key returns the tag key the filter applies to.
func (m *TagMatcher) Key() string { return m.f.TagK }

// GroupBy reports whether the query groups by the filter's key.
func (m *TagMatcher) GroupBy() bool { return m.f.GroupBy }

// MatchesAnyValue reports whether the filter accepts every value of its key
// (wildcard(*)): only the key's presence matters.
func (m *TagMatcher) MatchesAnyValue() bool { return m.any }

// Literals returns the exact values the filter accepts when it is a
// case-sensitive literal_or, so an engine can resolve them through the
// index; otherwise it returns false. Empty values, which no series can
// carry, are left out. The slice must not be modified.
func (m *TagMatcher) Literals() ([]string, bool) {
	if m.f.Type != FilterLiteralOr {
		return nil, false
	}
	return m.literals, true
}

// Matches reports whether a series passes the filter, given its value for
// the filter's key; present is false when the series lacks the key.
//
// A series that lacks the key passes only not_key. That holds for
// not_literal_or and not_iliteral_or too: their OpenTSDB classes would accept
// the absence, but OpenTSDB 2.4.1's scan requires every filtered key to be
// present (each becomes a row-key literal), so such series never reach them;
// hourglass keeps that observable behaviour. (not_key itself is compiled but
// not registered in 2.4.1; hourglass registers it.)
func (m *TagMatcher) Matches(value string, present bool) bool {
	if m.kind == matchNotKey {
		return !present
	}
	if !present {
		return false
	}
	if m.any {
		return true
	}
	if m.fold {
		value = strings.ToLower(value)
	}
	switch m.kind {
	case matchLiterals:
		var in bool
		if m.set != nil {
			_, in = m.set[value]
		} else {
			in = slices.Contains(m.literals, value)
		}
		return in != m.negate
	case matchGlob:
		return globMatch(m.glob, value)
	default:
		return m.re.MatchString(value)
	}
}

// globMatch matches s against the parts of a glob split on '*': the first
// part is a prefix, the last a suffix, the others appear in order between.
func globMatch(parts []string, s string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// FilterDescription is one entry of /api/config/filters.
type FilterDescription struct {
	Examples    string `json:"examples"`
	Description string `json:"description"`
}

// FilterDescriptions returns the /api/config/filters reply, keyed by filter
// type: OpenTSDB's texts, except regexp's, which says hourglass uses RE2,
// and not_key, which OpenTSDB 2.4.1 does not register.
func FilterDescriptions() map[string]FilterDescription {
	return map[string]FilterDescription{
		FilterLiteralOr: {
			Examples: `host=literal_or(web01),  host=literal_or(web01|web02|web03)  {"type":"literal_or","tagk":"host","filter":"web01|web02|web03","groupBy":false}`,
			Description: "Accepts one or more exact values and matches if the series contains any of them. " +
				"Multiple values can be included and must be separated by the | (pipe) character. " +
				"The filter is case sensitive and will not allow characters that TSDB does not allow at write time.",
		},
		FilterILiteralOr: {
			Examples: `host=iliteral_or(web01),  host=iliteral_or(web01|web02|web03)  {"type":"iliteral_or","tagk":"host","filter":"web01|web02|web03","groupBy":false}`,
			Description: "Accepts one or more exact values and matches if the series contains any of them. " +
				"Multiple values can be included and must be separated by the | (pipe) character. " +
				"The filter is case insensitive and will not allow characters that TSDB does not allow at write time.",
		},
		FilterNotLiteralOr: {
			Examples: `host=not_literal_or(web01),  host=not_literal_or(web01|web02|web03)  {"type":"not_literal_or","tagk":"host","filter":"web01|web02|web03","groupBy":false}`,
			Description: "Accepts one or more exact values and matches if the series does NOT contain any of them. " +
				"Multiple values can be included and must be separated by the | (pipe) character. " +
				"The filter is case sensitive and will not allow characters that TSDB does not allow at write time.",
		},
		FilterNotILiteralOr: {
			Examples: `host=not_iliteral_or(web01),  host=not_iliteral_or(web01|web02|web03)  {"type":"not_iliteral_or","tagk":"host","filter":"web01|web02|web03","groupBy":false}`,
			Description: "Accepts one or more exact values and matches if the series does NOT contain any of them. " +
				"Multiple values can be included and must be separated by the | (pipe) character. " +
				"The filter is case insensitive and will not allow characters that TSDB does not allow at write time.",
		},
		FilterWildcard: {
			Examples: `host=wildcard(web*),  host=wildcard(web*.tsdb.net)  {"type":"wildcard","tagk":"host","filter":"web*.tsdb.net","groupBy":false}`,
			Description: "Performs pre, post and in-fix glob matching of values. The globs are case sensitive and " +
				"multiple wildcards can be used. The wildcard character is the * (asterisk). At least one wildcard " +
				"must be present in the filter value. A wildcard by itself can be used as well to match on any " +
				"value for the tag key.",
		},
		FilterIWildcard: {
			Examples: `host=iwildcard(web*),  host=iwildcard(web*.tsdb.net)  {"type":"iwildcard","tagk":"host","filter":"web*.tsdb.net","groupBy":false}`,
			Description: "Performs pre, post and in-fix glob matching of values. The globs are case insensitive and " +
				"multiple wildcards can be used. The wildcard character is the * (asterisk). Case insensitivity " +
				"is achieved by dropping all values to lower case. At least one wildcard must be present in the " +
				"filter value. A wildcard by itself can be used as well to match on any value for the tag key.",
		},
		FilterRegexp: {
			Examples: `host=regexp(.*)  {"type":"regexp","tagk":"host","filter":".*","groupBy":false}`,
			Description: "Provides full regular expressions in RE2 syntax (https://github.com/google/re2/wiki/Syntax; " +
				"no backreferences or lookaround), matching anywhere in the value unless anchored with ^ and $. " +
				"Note that an expression containing curly braces {} or commas will not parse properly in URLs. " +
				"If the pattern is not a valid regular expression then an exception will be raised.",
		},
		FilterNotKey: {
			Examples: `host=not_key()  {"type":"not_key","tagk":"host","filter":"","groupBy":false}`,
			Description: "Skips any time series with the given tag key, regardless of the value. This can be useful " +
				"for situations where a metric has inconsistent tag sets. NOTE: The filter value must be null or " +
				"an empty string.",
		},
	}
}
