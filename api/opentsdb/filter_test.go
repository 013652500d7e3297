package opentsdb

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestParseTagFilter(t *testing.T) {
	tests := []struct {
		tagk, expr string
		want       Filter
		err        string
	}{
		{"host", "*", Filter{FilterWildcard, "host", "*", true}, ""},
		{"host", "web01", Filter{FilterLiteralOr, "host", "web01", true}, ""},
		{"host", "web01|web02", Filter{FilterLiteralOr, "host", "web01|web02", true}, ""},
		{"host", "web*", Filter{FilterIWildcard, "host", "web*", true}, ""},
		{"host", "*.example.com", Filter{FilterIWildcard, "host", "*.example.com", true}, ""},
		{"dc", "literal_or(lga|sjc)", Filter{FilterLiteralOr, "dc", "lga|sjc", true}, ""},
		{"dc", "LITERAL_OR(lga)", Filter{FilterLiteralOr, "dc", "lga", true}, ""},
		{"host", "regexp(web[0-9]+)", Filter{FilterRegexp, "host", "web[0-9]+", true}, ""},
		{"host", "regexp(a=b)", Filter{FilterRegexp, "host", "a=b", true}, ""},
		{"host", "not_key()", Filter{FilterNotKey, "host", "", true}, ""},
		{"host", "wildcard(*)", Filter{FilterWildcard, "host", "*", true}, ""},
		{"", "x", Filter{}, "Tagk cannot be null or empty"},
		{"host", "", Filter{}, "Filter cannot be null or empty"},
		{"host", "regexp(x", Filter{}, "Filter must end with a ')': regexp(x"},
		{"host", "(x)", Filter{}, "The filter type cannot be null or empty"},
		{"host", "foo(x)", Filter{}, "Could not find a tag value filter of the type: foo"},
		{"host", "wildcard(x)", Filter{}, "Filter must contain an asterisk"},
		{"host", "literal_or()", Filter{}, "Filter cannot be null or empty"},
		{"host", "literal_or(|)", Filter{}, "Filter must contain more than just a pipe"},
		{"host", "not_key(x)", Filter{}, "The filter must be empty for the not_key filter"},
		{"host", "regexp(()", Filter{}, "error parsing regexp: missing closing ): `(`"},
	}
	for _, tt := range tests {
		t.Run(tt.tagk+"="+tt.expr, func(t *testing.T) {
			got, err := ParseTagFilter(tt.tagk, tt.expr, true)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTagMatcher(t *testing.T) {
	type probe struct {
		value   string
		present bool
		want    bool
	}
	absent := probe{"", false, false}
	tests := []struct {
		f      Filter
		probes []probe
	}{
		{Filter{Type: FilterLiteralOr, TagK: "host", Expr: "web01|web02"},
			[]probe{{"web01", true, true}, {"web02", true, true}, {"WEB01", true, false}, {"web03", true, false}, absent}},
		{Filter{Type: FilterILiteralOr, TagK: "host", Expr: "Web01|web02"},
			[]probe{{"WEB01", true, true}, {"web02", true, true}, {"web03", true, false}, absent}},
		{Filter{Type: FilterNotLiteralOr, TagK: "host", Expr: "web01|web02"},
			[]probe{{"web01", true, false}, {"WEB01", true, true}, {"web03", true, true}, absent}},
		{Filter{Type: FilterNotILiteralOr, TagK: "host", Expr: "web01"},
			[]probe{{"WEB01", true, false}, {"web03", true, true}, absent}},
		{Filter{Type: FilterLiteralOr, TagK: "host", Expr: "a|b|c|d|e|f|g|h|i|j"},
			[]probe{{"a", true, true}, {"j", true, true}, {"k", true, false}}},
		{Filter{Type: FilterWildcard, TagK: "host", Expr: "*"},
			[]probe{{"anything", true, true}, {"", true, true}, absent}},
		{Filter{Type: FilterWildcard, TagK: "host", Expr: "web*"},
			[]probe{{"web01", true, true}, {"web", true, true}, {"Web01", true, false}, {"xweb01", true, false}, absent}},
		{Filter{Type: FilterWildcard, TagK: "host", Expr: "*.tsdb.net"},
			[]probe{{"web01.tsdb.net", true, true}, {"web01.tsdb.net.x", true, false}}},
		{Filter{Type: FilterWildcard, TagK: "host", Expr: "web*.tsdb.net"},
			[]probe{{"web01.tsdb.net", true, true}, {"web.tsdb.net", true, true}, {"xweb01.tsdb.net", true, false}, {"web01.tsdb.ne", true, false}}},
		{Filter{Type: FilterWildcard, TagK: "host", Expr: "*a*b*"},
			[]probe{{"ab", true, true}, {"xaxbx", true, true}, {"ba", true, false}}},
		{Filter{Type: FilterWildcard, TagK: "host", Expr: "a*a"},
			[]probe{{"aa", true, true}, {"a", true, false}, {"aba", true, true}}},
		{Filter{Type: FilterIWildcard, TagK: "host", Expr: "WEB*"},
			[]probe{{"web01", true, true}, {"Web01", true, true}, {"xweb", true, false}}},
		{Filter{Type: FilterRegexp, TagK: "host", Expr: "web[0-9]+"},
			[]probe{{"web01", true, true}, {"xweb01x", true, true}, {"web", true, false}, absent}},
		{Filter{Type: FilterRegexp, TagK: "host", Expr: "^web[0-9]+$"},
			[]probe{{"web01", true, true}, {"xweb01", true, false}}},
		{Filter{Type: FilterNotKey, TagK: "host"},
			[]probe{{"web01", true, false}, {"", false, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.f.String(), func(t *testing.T) {
			m, err := tt.f.Compile()
			if err != nil {
				t.Fatal(err)
			}
			if m.Key() != "host" || m.Filter() != tt.f {
				t.Errorf("Key %q, Filter %+v", m.Key(), m.Filter())
			}
			for _, p := range tt.probes {
				if got := m.Matches(p.value, p.present); got != p.want {
					t.Errorf("Matches(%q, %v) = %v, want %v", p.value, p.present, got, p.want)
				}
			}
		})
	}
}

func TestTagMatcherLiterals(t *testing.T) {
	tests := []struct {
		f    Filter
		want []string
		ok   bool
	}{
		{Filter{Type: FilterLiteralOr, TagK: "k", Expr: "a|b|a||c|"}, []string{"a", "b", "c"}, true},
		{Filter{Type: FilterILiteralOr, TagK: "k", Expr: "a"}, nil, false},
		{Filter{Type: FilterNotLiteralOr, TagK: "k", Expr: "a"}, nil, false},
		{Filter{Type: FilterWildcard, TagK: "k", Expr: "*"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.f.String(), func(t *testing.T) {
			m, err := tt.f.Compile()
			if err != nil {
				t.Fatal(err)
			}
			got, ok := m.Literals()
			if ok != tt.ok || !slices.Equal(got, tt.want) {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	m, _ := Filter{Type: FilterWildcard, TagK: "k", Expr: "**", GroupBy: true}.Compile()
	if !m.MatchesAnyValue() || !m.GroupBy() {
		t.Error("wildcard(**) should match any value and group by")
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		f    Filter
		want string
	}{
		{Filter{TagK: "k", Expr: "a"}, "The filter type cannot be null or empty"},
		{Filter{Type: FilterLiteralOr, Expr: "a"}, "The tagk cannot be null or empty"},
		{Filter{Type: "Literal_Or", TagK: "k", Expr: "a"}, "Could not find a tag value filter of the type: Literal_Or"},
		{Filter{Type: FilterLiteralOr, TagK: "k"}, "Filter cannot be null or empty"},
		{Filter{Type: FilterNotILiteralOr, TagK: "k", Expr: "|"}, "Filter must contain more than just a pipe"},
		{Filter{Type: FilterIWildcard, TagK: "k"}, "Filter cannot be null or empty"},
		{Filter{Type: FilterIWildcard, TagK: "k", Expr: "a"}, "Filter must contain an asterisk"},
		{Filter{Type: FilterRegexp, TagK: "k"}, "Filter cannot be null or empty"},
		{Filter{Type: FilterRegexp, TagK: "k", Expr: `a(?!b)`}, "error parsing regexp: invalid or unsupported Perl syntax: `(?!`"},
		{Filter{Type: FilterNotKey, TagK: "k", Expr: "x"}, "The filter must be empty for the not_key filter"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := tt.f.Compile()
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFilterDescriptions(t *testing.T) {
	d := FilterDescriptions()
	for _, k := range []string{"literal_or", "iliteral_or", "not_literal_or", "not_iliteral_or", "wildcard", "iwildcard", "regexp", "not_key"} {
		e, ok := d[k]
		if !ok || e.Description == "" || e.Examples == "" {
			t.Errorf("%s: %+v", k, e)
		}
		// Every type listed must compile.
		f := Filter{Type: k, TagK: "host", Expr: "a*"}
		if k == FilterNotKey {
			f.Expr = ""
		}
		if _, err := f.Compile(); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if len(d) != 8 {
		t.Errorf("%d filters", len(d))
	}
	b, err := json.Marshal(d)
	if err != nil || !json.Valid(b) {
		t.Fatal(err)
	}
	var back map[string]map[string]string
	if err := json.Unmarshal(b, &back); err != nil || back["regexp"]["examples"] == "" {
		t.Errorf("round trip: %v %v", err, back)
	}
}

func TestFilterJSON(t *testing.T) {
	f := Filter{Type: FilterWildcard, TagK: "host", Expr: "web*", GroupBy: true}
	got, _ := json.Marshal(f)
	if want := `{"tagk":"host","filter":"web*","group_by":true,"type":"wildcard"}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
