package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
)

// The query language against the running binary. Every expected value
// below is worked out by hand from the points written, in the comments.

// t0 is 2023-11-14T22:00:00Z, on the hour (and the minute).
const otsT0 = int64(1699999200)

func TestOpenTSDBQuerySemantics(t *testing.T) {
	s := start(t, t.TempDir())

	// Aggregators: four float series at one timestamp, values (by host) a=10
	// b=40 c=20 d=30; sorted 10 20 30 40; series order (for first, last,
	// diff) is a b c d.
	otsPutOK(t, s, otsArr(
		otsDP("agg.f", otsT0, "10.0", "host", "a"), otsDP("agg.f", otsT0, "40.0", "host", "b"),
		otsDP("agg.f", otsT0, "20.0", "host", "c"), otsDP("agg.f", otsT0, "30.0", "host", "d")))
	// The same as integers at one timestamp: 1 3 5 → sum 9, avg 9/3=3
	// (integer division), and at t0+60: 4 8 3 → avg 15/3=5, at t0+120: 2 6 9
	// → avg 17/3=5 (truncated).
	otsPutOK(t, s, otsArr(
		otsDP("agg.i", otsT0, "1", "host", "a"), otsDP("agg.i", otsT0, "3", "host", "b"), otsDP("agg.i", otsT0, "5", "host", "c"),
		otsDP("agg.i", otsT0+60, "4", "host", "a"), otsDP("agg.i", otsT0+60, "8", "host", "b"), otsDP("agg.i", otsT0+60, "3", "host", "c"),
		otsDP("agg.i", otsT0+120, "2", "host", "a"), otsDP("agg.i", otsT0+120, "6", "host", "b"), otsDP("agg.i", otsT0+120, "9", "host", "c")))
	// Interpolation: A = {10:5, 30:15, 50:5}, B = {0:10, 20:20, 40:10, 60:20}
	// (seconds after t0).
	otsPutOK(t, s, otsArr(
		otsDP("lerp.m", otsT0+10, "5", "host", "a"), otsDP("lerp.m", otsT0+30, "15", "host", "a"), otsDP("lerp.m", otsT0+50, "5", "host", "a"),
		otsDP("lerp.m", otsT0, "10", "host", "b"), otsDP("lerp.m", otsT0+20, "20", "host", "b"),
		otsDP("lerp.m", otsT0+40, "10", "host", "b"), otsDP("lerp.m", otsT0+60, "20", "host", "b")))
	// Downsampling: 1..6 at t0+0,10,...,50; nothing in the next minute;
	// 10,20,...,60 at t0+120,...,170.
	var ds []string
	for i := int64(0); i < 6; i++ {
		ds = append(ds, otsDP("ds.m", otsT0+10*i, fmt.Sprint(i+1), "host", "a"))
		ds = append(ds, otsDP("ds.m", otsT0+120+10*i, fmt.Sprint(10*(i+1)), "host", "a"))
	}
	otsPutOK(t, s, otsArr(ds...))
	// A counter: 100 200 300, reset to 50, then 150, every 10 s.
	otsPutOK(t, s, otsArr(
		otsDP("rate.m", otsT0, "100", "host", "a"), otsDP("rate.m", otsT0+10, "200", "host", "a"), otsDP("rate.m", otsT0+20, "300", "host", "a"),
		otsDP("rate.m", otsT0+30, "50", "host", "a"), otsDP("rate.m", otsT0+40, "150", "host", "a")))
	// Filters: five series whose values are powers of two, so the sum
	// names the series that matched.
	otsPutOK(t, s, otsArr(
		otsDP("flt.m", otsT0, "1", "host", "web01", "dc", "lga", "env", "prod"),
		otsDP("flt.m", otsT0, "2", "host", "web02", "dc", "lga", "env", "prod"),
		otsDP("flt.m", otsT0, "4", "host", "Web03", "dc", "sjc", "env", "dev"),
		otsDP("flt.m", otsT0, "8", "host", "db01", "dc", "sjc"),
		otsDP("flt.m", otsT0, "16", "host", "db02")))

	q := func(t *testing.T, sub string, extra ...string) []otsResult {
		t.Helper()
		body := fmt.Sprintf(`{"start":%d,"end":%d,"queries":[%s]%s}`, otsT0, otsT0+3599, sub, strings.Join(extra, ""))
		return otsQuery(t, s, "/api/query", body)
	}
	one := func(t *testing.T, sub string, exp otsPts, extra ...string) {
		t.Helper()
		otsCheckPoints(t, sub, otsSingle(t, sub, q(t, sub, extra...)).points(t), exp)
	}

	t.Run("every aggregator", func(t *testing.T) {
		dev := math.Sqrt(500.0 / 4) // mean 25; squares 225+225+25+25 = 500; population
		cases := map[string]float64{
			"sum": 100, "zimsum": 100, "pfsum": 100, "min": 10, "max": 40, "mimmin": 10, "mimmax": 40,
			"avg": 25, "median": 30, // element n/2 = 2 of 10 20 30 40
			"dev": dev, "count": 4, "first": 10, "last": 30, "diff": 20, // last - first
			"mult": 10 * 40 * 20 * 30, "squareSum": 100 + 1600 + 400 + 900,
			// Commons Math legacy: pos = p(n+1); 50 → 2.5 → 25; 75 → 3.75 → 37.5; ≥ n → max.
			"p50": 25, "p75": 37.5, "p90": 40, "p95": 40, "p99": 40, "p999": 40,
			// pos = round-half-even(n·p): 2, 3, 3.6→4, 3.8→4, 3.96→4, 3.996→4.
			"ep50r3": 20, "ep75r3": 30, "ep90r3": 40, "ep95r3": 40, "ep99r3": 40, "ep999r3": 40,
			// pos = 1 + (n−1)p: 2.5, 3.25, 3.7, 3.85, 3.97, 3.997.
			"ep50r7": 25, "ep75r7": 32.5, "ep90r7": 37, "ep95r7": 38.5, "ep99r7": 39.7, "ep999r7": 39.97,
		}
		names := otsWant(t, s, 200, "GET", "/api/aggregators", nil)
		var list []string
		otsDecode(t, names, &list)
		if len(list) != len(cases)+1 { // and none
			t.Fatalf("/api/aggregators lists %d names, want %d: %v", len(list), len(cases)+1, list)
		}
		for _, name := range list {
			if name == "none" {
				continue
			}
			v, ok := cases[name]
			if !ok {
				t.Fatalf("aggregator %q has no expected value", name)
			}
			one(t, fmt.Sprintf(`{"metric":"agg.f","aggregator":%q}`, name), otsPts{otsT0: v})
		}
		rs := q(t, `{"metric":"agg.f","aggregator":"none"}`)
		if len(rs) != 4 {
			t.Fatalf("none: %d results, want one per series", len(rs))
		}
		got := map[string]string{}
		for _, r := range rs {
			got[r.Tags["host"]] = r.points(t)[otsT0]
		}
		if fmt.Sprint(got) != "map[a:10.0 b:40.0 c:20.0 d:30.0]" {
			t.Fatalf("none: %v", got)
		}
		otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[{"metric":"agg.f","aggregator":"Sum"}]}`, otsT0),
			"No such aggregation function")
	})

	t.Run("integers stay integers", func(t *testing.T) {
		r := otsSingle(t, "sum", q(t, `{"metric":"agg.i","aggregator":"sum"}`))
		p := r.points(t)
		// Exact text: an integer series aggregates to JSON integers.
		if p[otsT0] != "9" || p[otsT0+60] != "15" || p[otsT0+120] != "17" {
			t.Fatalf("sum of integers: %v", p)
		}
		p = otsSingle(t, "avg", q(t, `{"metric":"agg.i","aggregator":"avg"}`)).points(t)
		if p[otsT0] != "3" || p[otsT0+60] != "5" || p[otsT0+120] != "5" {
			t.Fatalf("avg of integers (integer division): %v", p)
		}
		// Downsampled values are floats: 1m-avg of {9}... per series first.
		p = otsSingle(t, "ds", q(t, `{"metric":"agg.i","aggregator":"sum","downsample":"1m-avg"}`)).points(t)
		if p[otsT0] != "9.0" {
			t.Fatalf("downsampled sum: %v", p)
		}
	})

	t.Run("interpolation", func(t *testing.T) {
		// sum (lerp): t0 B alone 10; t10 5+lerp(B)15 = 20; t20 lerp(A)10+20 = 30;
		// t30 15+15 = 30; t40 10+10 = 20; t50 5+15 = 20; t60 B alone (A has ended) 20.
		one(t, `{"metric":"lerp.m","aggregator":"sum"}`,
			otsPts{otsT0: 10, otsT0 + 10: 20, otsT0 + 20: 30, otsT0 + 30: 30, otsT0 + 40: 20, otsT0 + 50: 20, otsT0 + 60: 20})
		// zimsum: the missing one is 0 while it is between its points.
		one(t, `{"metric":"lerp.m","aggregator":"zimsum"}`,
			otsPts{otsT0: 10, otsT0 + 10: 5, otsT0 + 20: 20, otsT0 + 30: 15, otsT0 + 40: 10, otsT0 + 50: 5, otsT0 + 60: 20})
		// pfsum: the missing one is its previous value.
		one(t, `{"metric":"lerp.m","aggregator":"pfsum"}`,
			otsPts{otsT0: 10, otsT0 + 10: 15, otsT0 + 20: 25, otsT0 + 30: 35, otsT0 + 40: 25, otsT0 + 50: 15, otsT0 + 60: 20})
		// max (lerp): max(5,15) max(10,20) max(15,15) max(10,10) max(5,15).
		one(t, `{"metric":"lerp.m","aggregator":"max"}`,
			otsPts{otsT0: 10, otsT0 + 10: 15, otsT0 + 20: 20, otsT0 + 30: 15, otsT0 + 40: 10, otsT0 + 50: 15, otsT0 + 60: 20})
		// mimmax: the missing one is the minimum, so only real points count.
		one(t, `{"metric":"lerp.m","aggregator":"mimmax"}`,
			otsPts{otsT0: 10, otsT0 + 10: 5, otsT0 + 20: 20, otsT0 + 30: 15, otsT0 + 40: 10, otsT0 + 50: 5, otsT0 + 60: 20})
		one(t, `{"metric":"lerp.m","aggregator":"mimmin"}`,
			otsPts{otsT0: 10, otsT0 + 10: 5, otsT0 + 20: 20, otsT0 + 30: 15, otsT0 + 40: 10, otsT0 + 50: 5, otsT0 + 60: 20})
		// avg (lerp, integers): (5+15)/2 (10+20)/2 (15+15)/2 (10+10)/2 (5+15)/2.
		one(t, `{"metric":"lerp.m","aggregator":"avg"}`,
			otsPts{otsT0: 10, otsT0 + 10: 10, otsT0 + 20: 15, otsT0 + 30: 15, otsT0 + 40: 10, otsT0 + 50: 10, otsT0 + 60: 20})
		// count counts real points only (OpenTSDB issue 977 counts the
		// interpolated one too and says 2 at t10 ... t50).
		one(t, `{"metric":"lerp.m","aggregator":"count"}`,
			otsPts{otsT0: 1, otsT0 + 10: 1, otsT0 + 20: 1, otsT0 + 30: 1, otsT0 + 40: 1, otsT0 + 50: 1, otsT0 + 60: 1})
	})

	t.Run("downsampling and fill policies", func(t *testing.T) {
		sub := func(spec string) string {
			return fmt.Sprintf(`{"metric":"ds.m","aggregator":"sum","downsample":%q}`, spec)
		}
		// Fill policies fill every empty bucket of the range: end at t0+179.
		one := func(t *testing.T, sub string, exp otsPts) {
			t.Helper()
			body := fmt.Sprintf(`{"start":%d,"end":%d,"queries":[%s]}`, otsT0, otsT0+179, sub)
			otsCheckPoints(t, sub, otsSingle(t, sub, otsQuery(t, s, "/api/query", body)).points(t), exp)
		}
		// Minute buckets: avg(1..6) = 3.5, the empty minute, avg(10..60) = 35.
		one(t, sub("1m-avg"), otsPts{otsT0: 3.5, otsT0 + 120: 35})
		one(t, sub("1m-avg-none"), otsPts{otsT0: 3.5, otsT0 + 120: 35})
		one(t, sub("1m-avg-nan"), otsPts{otsT0: 3.5, otsT0 + 60: math.NaN(), otsT0 + 120: 35})
		one(t, sub("1m-avg-zero"), otsPts{otsT0: 3.5, otsT0 + 60: 0, otsT0 + 120: 35})
		p := otsSingle(t, "null", otsQuery(t, s, "/api/query", fmt.Sprintf(`{"start":%d,"end":%d,"queries":[%s]}`, otsT0, otsT0+179, sub("1m-avg-null")))).points(t)
		if p[otsT0+60] != "null" || len(p) != 3 {
			t.Fatalf("1m-avg-null: %v", p)
		}
		one(t, sub("1m-sum"), otsPts{otsT0: 21, otsT0 + 120: 210})
		one(t, sub("1m-count"), otsPts{otsT0: 6, otsT0 + 120: 6})
		// 30 s buckets: max(1,2,3) max(4,5,6) max(10,20,30) max(40,50,60).
		one(t, sub("30s-max"), otsPts{otsT0: 3, otsT0 + 30: 6, otsT0 + 120: 30, otsT0 + 150: 60})
		one(t, sub("0all-sum"), otsPts{otsT0: 231})
		// Buckets are aligned to the epoch: from t0+10 the bucket t0 is
		// before the start and not emitted.
		body := fmt.Sprintf(`{"start":%d,"end":%d,"queries":[%s]}`, otsT0+10, otsT0+3599, sub("1m-sum"))
		otsCheckPoints(t, "from t0+10", otsSingle(t, "", otsQuery(t, s, "/api/query", body)).points(t), otsPts{otsT0 + 120: 210})
		// Calendar days: t0 is 07:00 on the 15th in Tokyo; that day starts at
		// 2023-11-14T15:00Z = 1699974000.
		body = fmt.Sprintf(`{"start":"2023/11/15","end":%d,"timezone":"Asia/Tokyo","queries":[%s]}`, otsT0+3599, sub("1dc-sum"))
		otsCheckPoints(t, "1dc Tokyo", otsSingle(t, "", otsQuery(t, s, "/api/query", body)).points(t), otsPts{1699974000: 231})
		// useCalendar turns 1d into 1dc; in UTC the day starts 1699920000.
		body = fmt.Sprintf(`{"start":"2023/11/14","end":%d,"useCalendar":true,"queries":[%s]}`, otsT0+3599, sub("1d-sum"))
		otsCheckPoints(t, "1d useCalendar", otsSingle(t, "", otsQuery(t, s, "/api/query", body)).points(t), otsPts{1699920000: 231})
		otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[%s]}`, otsT0, sub("1m-none")), "")
		otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[%s]}`, otsT0, sub("1x-avg")), "")
	})

	t.Run("rates and counters", func(t *testing.T) {
		sub := func(opts string) string {
			return fmt.Sprintf(`{"metric":"rate.m","aggregator":"sum","rate":true%s}`, opts)
		}
		// (200-100)/10, (300-200)/10, (50-300)/10, (150-50)/10.
		one(t, sub(""), otsPts{otsT0 + 10: 10, otsT0 + 20: 10, otsT0 + 30: -25, otsT0 + 40: 10})
		// A counter wrapping at 1000: (1000-300+50)/10 = 75.
		one(t, sub(`,"rateOptions":{"counter":true,"counterMax":1000}`), otsPts{otsT0 + 10: 10, otsT0 + 20: 10, otsT0 + 30: 75, otsT0 + 40: 10})
		// 75 is above the reset value 50: reported as 0.
		one(t, sub(`,"rateOptions":{"counter":true,"counterMax":1000,"resetValue":50}`), otsPts{otsT0 + 10: 10, otsT0 + 20: 10, otsT0 + 30: 0, otsT0 + 40: 10})
		// Dropped resets.
		one(t, sub(`,"rateOptions":{"counter":true,"dropResets":true}`), otsPts{otsT0 + 10: 10, otsT0 + 20: 10, otsT0 + 40: 10})
		// Without counterMax the wrap is at 2^63-1: (2^63-1-300+50)/10.
		one(t, sub(`,"rateOptions":{"counter":true}`), otsPts{otsT0 + 10: 10, otsT0 + 20: 10, otsT0 + 30: (math.MaxInt64 - 250.0) / 10, otsT0 + 40: 10})
		// Downsample first, then the rate: 20 s sums 300, 350, 150 → (350-300)/20, (150-350)/20.
		one(t, `{"metric":"rate.m","aggregator":"sum","downsample":"20s-sum","rate":true}`, otsPts{otsT0 + 20: 2.5, otsT0 + 40: -10})
		// The same in the query-string form.
		rs := otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=%s", otsT0, otsT0+3599, url.QueryEscape("sum:rate{counter,1000,50}:rate.m")))
		otsCheckPoints(t, "m=rate{counter,1000,50}", otsSingle(t, "", rs).points(t), otsPts{otsT0 + 10: 10, otsT0 + 20: 10, otsT0 + 30: 0, otsT0 + 40: 10})
		rs = otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=%s", otsT0, otsT0+3599, url.QueryEscape("sum:rate{dropcounter}:rate.m")))
		otsCheckPoints(t, "m=rate{dropcounter}", otsSingle(t, "", rs).points(t), otsPts{otsT0 + 10: 10, otsT0 + 20: 10, otsT0 + 40: 10})
		rs = otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=%s", otsT0, otsT0+3599, url.QueryEscape("sum:20s-sum:rate:rate.m")))
		otsCheckPoints(t, "m=20s-sum:rate", otsSingle(t, "", rs).points(t), otsPts{otsT0 + 20: 2.5, otsT0 + 40: -10})
	})

	t.Run("filters", func(t *testing.T) {
		f := func(filters string, explicit bool) string {
			return fmt.Sprintf(`{"metric":"flt.m","aggregator":"sum","explicitTags":%v,"filters":[%s]}`, explicit, filters)
		}
		flt := func(typ, k, v string, groupBy bool) string {
			return fmt.Sprintf(`{"type":%q,"tagk":%q,"filter":%q,"groupBy":%v}`, typ, k, v, groupBy)
		}
		// web01=1 web02=2 Web03=4 db01=8 db02=16.
		cases := []struct {
			name, filters string
			explicit      bool
			sum           float64
		}{
			{"literal_or", flt("literal_or", "host", "web01|web02", false), false, 3},
			{"iliteral_or", flt("iliteral_or", "host", "WEB01|web03", false), false, 5},
			{"not_literal_or", flt("not_literal_or", "host", "web01", false), false, 30},
			{"not_iliteral_or", flt("not_iliteral_or", "host", "WEB01|db01", false), false, 22},
			{"wildcard", flt("wildcard", "host", "web*", false), false, 3},
			{"iwildcard", flt("iwildcard", "host", "web*", false), false, 7},
			{"wildcard infix", flt("wildcard", "host", "d*0*", false), false, 24},
			{"wildcard any value", flt("wildcard", "env", "*", false), false, 7},
			{"regexp", flt("regexp", "host", "^(web|db)01$", false), false, 9},
			{"not_key env", flt("not_key", "env", "", false), false, 24},
			{"not_key dc", flt("not_key", "dc", "", false), false, 16},
			{"two filters on a key are ANDed", flt("wildcard", "host", "web*", false) + "," + flt("not_literal_or", "host", "web02", false), false, 1},
			{"filters on two keys", flt("literal_or", "dc", "sjc", false) + "," + flt("wildcard", "env", "*", false), false, 4},
			{"explicitTags host,dc", flt("wildcard", "host", "*", false) + "," + flt("wildcard", "dc", "*", false), true, 8},
			{"explicitTags host", flt("wildcard", "host", "*", false), true, 16},
			{"explicitTags with not_key", flt("wildcard", "host", "*", false) + "," + flt("wildcard", "dc", "*", false) + "," + flt("not_key", "env", "", false), true, 8},
		}
		for _, c := range cases {
			one(t, f(c.filters, c.explicit), otsPts{otsT0: c.sum})
		}
		// group by dc: lga = 1+2, sjc = 4+8; db02 has no dc and is left out.
		rs := q(t, f(flt("wildcard", "dc", "*", true), false))
		if len(rs) != 2 {
			t.Fatalf("group by dc: %d results", len(rs))
		}
		for _, r := range rs {
			switch r.Tags["dc"] {
			case "lga":
				otsCheckPoints(t, "lga", r.points(t), otsPts{otsT0: 3})
				if r.Tags["env"] != "prod" || fmt.Sprint(r.AggregateTags) != "[host]" {
					t.Fatalf("lga tags %v aggregateTags %v", r.Tags, r.AggregateTags)
				}
			case "sjc":
				otsCheckPoints(t, "sjc", r.points(t), otsPts{otsT0: 12})
				// env: only Web03 has it, with one value, so it stays a tag.
				if r.Tags["env"] != "dev" || fmt.Sprint(r.AggregateTags) != "[host]" {
					t.Fatalf("sjc tags %v aggregateTags %v", r.Tags, r.AggregateTags)
				}
			default:
				t.Fatalf("group %v", r.Tags)
			}
		}
		// Group by dc, filter (not grouping) on host.
		rs = q(t, f(flt("wildcard", "dc", "*", true)+","+flt("literal_or", "host", "web01|db01", false), false))
		got := map[string]string{}
		for _, r := range rs {
			got[r.Tags["dc"]] = r.points(t)[otsT0]
		}
		if fmt.Sprint(got) != "map[lga:1 sjc:8]" {
			t.Fatalf("group by dc, host filter: %v", got)
		}
		// The old tags syntax: host=web01|db01 groups by host.
		rs = q(t, `{"metric":"flt.m","aggregator":"sum","tags":{"host":"web01|db01"}}`)
		got = map[string]string{}
		for _, r := range rs {
			got[r.Tags["host"]] = r.points(t)[otsT0]
		}
		if fmt.Sprint(got) != "map[db01:8 web01:1]" {
			t.Fatalf("tags host=web01|db01: %v", got)
		}
		if rs := q(t, `{"metric":"flt.m","aggregator":"sum","tags":{"host":"*"}}`); len(rs) != 5 {
			t.Fatalf("tags host=*: %d groups, want 5", len(rs))
		}
		// The query-string forms: group-by braces, then filter braces.
		rs = otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=%s", otsT0, otsT0+3599, url.QueryEscape("sum:flt.m{dc=*}{host=wildcard(web*)}")))
		if len(rs) != 1 || rs[0].Tags["dc"] != "lga" || rs[0].points(t)[otsT0] != "3" {
			t.Fatalf("m= with two braces: %+v", rs)
		}
		rs = otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=%s", otsT0, otsT0+3599, url.QueryEscape("sum:explicit_tags:flt.m{host=*}")))
		otsCheckPoints(t, "m=explicit_tags", otsSingle(t, "", rs).points(t), otsPts{otsT0: 16})
		rs = otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=%s", otsT0, otsT0+3599, url.QueryEscape("sum:flt.m{}{env=not_key()}")))
		otsCheckPoints(t, "m= not_key", otsSingle(t, "", rs).points(t), otsPts{otsT0: 24})
		// Names that were never written are OpenTSDB's 400s.
		otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[%s]}`, otsT0, f(flt("literal_or", "nokey", "x", false), false)), "No such name for 'tagk'")
		otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[%s]}`, otsT0, f(flt("literal_or", "host", "web99", false), false)), "No such name for 'tagv'")
		otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[%s]}`, otsT0, f(flt("regexp", "host", "(", false), false)), "")
		otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[%s]}`, otsT0, f(flt("nosuch", "host", "x", false), false)), "")
		otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[{"metric":"no.such","aggregator":"sum"}]}`, otsT0), "No such name for 'metrics'")
		// Sub-queries run side by side; the error is still the first in
		// request order, whichever fails first.
		for range 5 {
			otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[{"metric":"flt.m","aggregator":"sum"},%s,{"metric":"no.such","aggregator":"sum"}]}`,
				otsT0, f(flt("literal_or", "nokey", "x", false), false)), "No such name for 'tagk'")
			otsWantError(t, s, 400, "POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[{"metric":"flt.m","aggregator":"sum"},{"metric":"no.such","aggregator":"sum"},%s]}`,
				otsT0, f(flt("literal_or", "nokey", "x", false), false)), "No such name for 'metrics'")
		}
	})

	t.Run("duplicate timestamps keep the last write", func(t *testing.T) {
		otsPutOK(t, s, otsArr(otsDP("dup.m", otsT0, "1", "host", "a")))
		otsPutOK(t, s, otsArr(otsDP("dup.m", otsT0, "2", "host", "a"), otsDP("dup.m", otsT0+1, "3.5", "host", "a")))
		otsPutOK(t, s, otsArr(otsDP("dup.m", otsT0+1, "4", "host", "a")))
		one(t, `{"metric":"dup.m","aggregator":"sum"}`, otsPts{otsT0: 2, otsT0 + 1: 4})
		one(t, `{"metric":"dup.m","aggregator":"sum","downsample":"1m-count"}`, otsPts{otsT0: 2})
	})

	t.Run("output options", func(t *testing.T) {
		sub := `{"metric":"ds.m","aggregator":"sum"}`
		end := otsT0 + 59
		// msResolution: ms keys; arrays: [[ts,v]].
		body := fmt.Sprintf(`{"start":%d,"end":%d,"msResolution":true,"queries":[%s]}`, otsT0, end, sub)
		p := otsSingle(t, "", otsQuery(t, s, "/api/query?arrays", body)).points(t)
		if p[otsT0*1000] != "1" || p[(otsT0+50)*1000] != "6" || len(p) != 6 {
			t.Fatalf("msResolution arrays: %v", p)
		}
		raw := otsWant(t, s, 200, "POST", "/api/query?arrays=true", body)
		if !strings.Contains(string(raw), `"dps":[[1699999200000,1],[1699999210000,2]`) {
			t.Fatalf("arrays form: %s", raw)
		}
		// showTSUIDs, showQuery, showStats and showSummary (last element).
		body = fmt.Sprintf(`{"start":%d,"end":%d,"showTSUIDs":true,"showQuery":true,"showStats":true,"showSummary":true,"queries":[%s,%s]}`,
			otsT0, end, sub, `{"metric":"agg.f","aggregator":"max"}`)
		rs := otsQuery(t, s, "/api/query", body)
		if len(rs) != 3 || rs[2].StatsSummary == nil || rs[0].StatsSummary != nil {
			t.Fatalf("showSummary: %+v", rs)
		}
		sum := rs[2].StatsSummary
		if sum["emittedDPs"] != otsNum(7) || sum["queryIdx_00"] == nil || sum["queryIdx_01"] == nil {
			t.Fatalf("statsSummary: %v", sum)
		}
		if len(rs[0].TSUIDs) != 1 || len(rs[1].TSUIDs) != 4 || rs[0].Query["index"] != otsNum(0) || rs[1].Query["index"] != otsNum(1) ||
			rs[1].Query["aggregator"] != "max" || rs[0].Stats["emittedDPs"] != otsNum(6) {
			t.Fatalf("tsuids/query/stats: %+v", rs[:2])
		}
		for i := 1; i < len(rs[1].TSUIDs); i++ {
			if rs[1].TSUIDs[i-1] >= rs[1].TSUIDs[i] {
				t.Fatalf("tsuids not sorted: %v", rs[1].TSUIDs)
			}
		}
		// A tsuid sub-query reads those series: a and c of agg.f → max(10,20).
		var tsuids []string
		for _, id := range rs[1].TSUIDs {
			tsuids = append(tsuids, id)
		}
		lk := otsWant(t, s, 200, "GET", "/api/search/lookup?m="+url.QueryEscape("agg.f{host=a}"), nil)
		var look struct {
			Results []struct{ TSUID string }
		}
		otsDecode(t, lk, &look)
		lk = otsWant(t, s, 200, "GET", "/api/search/lookup?m="+url.QueryEscape("agg.f{host=c}"), nil)
		var look2 struct {
			Results []struct{ TSUID string }
		}
		otsDecode(t, lk, &look2)
		ac := look.Results[0].TSUID + "," + look2.Results[0].TSUID
		body = fmt.Sprintf(`{"start":%d,"end":%d,"queries":[{"aggregator":"max","tsuids":[%q,%q]}]}`, otsT0, end,
			look.Results[0].TSUID, look2.Results[0].TSUID)
		r := otsSingle(t, "tsuids", otsQuery(t, s, "/api/query", body))
		otsCheckPoints(t, "tsuids", r.points(t), otsPts{otsT0: 20})
		if r.Metric != "agg.f" || fmt.Sprint(r.AggregateTags) != "[host]" {
			t.Fatalf("tsuid result: %+v", r)
		}
		rs = otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&tsuid=sum:%s", otsT0, end, ac))
		otsCheckPoints(t, "tsuid=", otsSingle(t, "", rs).points(t), otsPts{otsT0: 30})
		otsWantError(t, s, 400, "GET", fmt.Sprintf("/api/query?start=%d&tsuid=sum:XYZ", otsT0), nil, "Invalid TSUID")
		// A TSUID of another metric.
		if len(tsuids) > 0 {
			other := otsSingle(t, "", q(t, `{"metric":"ds.m","aggregator":"sum"}`, `,"showTSUIDs":true`)).TSUIDs[0]
			otsWantError(t, s, 400, "GET", fmt.Sprintf("/api/query?start=%d&tsuid=sum:%s,%s", otsT0, tsuids[0], other), nil, "did not share the same metric")
		}
		// Times: ms epoch, relative, absolute, dotted seconds.
		for _, st := range []string{fmt.Sprint(otsT0 * 1000), fmt.Sprint(otsT0), "2023/11/14-22:00:00", "2023/11/14 22:00", "1699999200.000"} {
			body = fmt.Sprintf(`{"start":%q,"end":%d,"queries":[%s]}`, st, end, sub)
			otsCheckPoints(t, "start "+st, otsSingle(t, st, otsQuery(t, s, "/api/query", body)).points(t),
				otsPts{otsT0: 1, otsT0 + 10: 2, otsT0 + 20: 3, otsT0 + 30: 4, otsT0 + 40: 5, otsT0 + 50: 6})
		}
		// A range without data has nothing: 200 [].
		if rs := otsQueryGET(t, s, "start=1h-ago&m=sum:ds.m"); len(rs) != 0 {
			t.Fatalf("1h-ago: %+v", rs)
		}
		// The GET form: timezone (which 2.4.1 ignores there), and every flag.
		rs = otsQueryGET(t, s, fmt.Sprintf("start=%s&end=%d&timezone=Asia/Tokyo&m=%s", url.QueryEscape("2023/11/15"), otsT0+3599, url.QueryEscape("sum:1dc-sum:ds.m")))
		otsCheckPoints(t, "GET timezone", otsSingle(t, "", rs).points(t), otsPts{1699974000: 231})
		rs = otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=sum:ds.m&show_query&show_stats&show_summary&no_annotations&global_annotations", otsT0, end))
		if len(rs) != 2 || rs[0].Query["metric"] != "ds.m" || rs[0].Stats == nil || rs[1].StatsSummary == nil {
			t.Fatalf("GET flags: %+v", rs)
		}
		// The GET form, with ms and show_tsuids.
		rs = otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=sum:1m-max:ds.m&ms&show_tsuids&arrays", otsT0, otsT0+179))
		otsCheckPoints(t, "GET ms", otsSingle(t, "", rs).points(t), otsPts{otsT0 * 1000: 6, (otsT0 + 120) * 1000: 60})
	})

	t.Run("bad input", func(t *testing.T) {
		cases := []struct {
			method, path, body, msg string
			code                    int
		}{
			{"POST", "/api/query", "", "Missing message content", 400},
			{"POST", "/api/query", "{", "Unable to parse the given JSON", 400},
			{"POST", "/api/query", `{"queries":[{"metric":"ds.m","aggregator":"sum"}]}`, "Missing start time", 400},
			{"POST", "/api/query", fmt.Sprintf(`{"start":%d}`, otsT0), "Missing queries", 400},
			{"POST", "/api/query", fmt.Sprintf(`{"start":%d,"end":%d,"queries":[{"metric":"ds.m","aggregator":"sum"}]}`, otsT0, otsT0-1), "must be greater than the start time", 400},
			{"POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[{"metric":"ds.m"}]}`, otsT0), "Missing the aggregation function", 400},
			{"POST", "/api/query", fmt.Sprintf(`{"start":%d,"queries":[{"aggregator":"sum"}]}`, otsT0), "Missing the metric or tsuids", 400},
			{"POST", "/api/query", `{"start":"yesterday","queries":[{"metric":"ds.m","aggregator":"sum"}]}`, "Invalid", 400},
			{"POST", "/api/query", fmt.Sprintf(`{"start":%d,"timezone":"Mars/Base","queries":[{"metric":"ds.m","aggregator":"sum"}]}`, otsT0), "Invalid timezone name", 400},
			{"POST", "/api/query", fmt.Sprintf(`{"start":%d,"delete":true,"queries":[{"metric":"ds.m","aggregator":"sum"}]}`, otsT0), "Deleting data is not enabled", 400},
			{"DELETE", fmt.Sprintf("/api/query?start=%d&m=sum:ds.m", otsT0), "", "Deleting data is not enabled", 400},
			{"GET", "/api/query?m=sum:ds.m", "", "Missing parameter <code>start</code>", 400},
			{"GET", fmt.Sprintf("/api/query?start=%d", otsT0), "", "Missing sub queries", 400},
			{"GET", fmt.Sprintf("/api/query?start=%d&m=sum", otsT0), "", "not enough :-separated parts", 400},
			{"GET", fmt.Sprintf("/api/query?start=%d&m=%s", otsT0, url.QueryEscape("sum:ds.m{host=a")), "", "Missing '}'", 400},
			{"GET", fmt.Sprintf("/api/query?start=%d&m=%s", otsT0, url.QueryEscape("sum:rate{counter,x}:ds.m")), "", "not a number", 400},
			{"PUT", "/api/query", "", "Method not allowed", 405},
		}
		for _, c := range cases {
			var body any
			if c.body != "" {
				body = c.body
			}
			otsWantError(t, s, c.code, c.method, c.path, body, c.msg)
		}
	})
}

func otsNum(n int) any { return json.Number(fmt.Sprint(n)) }

// TestOpenTSDBQueryLimits: limits fail fast with 413 and 408 and a message.
func TestOpenTSDBQueryLimits(t *testing.T) {
	s := start(t, t.TempDir(), "-query-max-series", "3", "-query-max-points", "10")
	var ps []string
	for h := 0; h < 4; h++ {
		for i := int64(0); i < 4; i++ {
			ps = append(ps, otsDP("lim.m", otsT0+i, "1", "host", fmt.Sprint("h", h)))
		}
	}
	otsPutOK(t, s, otsArr(ps...))
	body := func(filter string) string {
		return fmt.Sprintf(`{"start":%d,"end":%d,"queries":[{"metric":"lim.m","aggregator":"sum","filters":[%s]}]}`, otsT0, otsT0+60, filter)
	}
	// Four series, more than 3.
	otsWantError(t, s, 413, "POST", "/api/query", body(""), "limit of 3 series")
	// Three series but 12 points, more than 10.
	otsWantError(t, s, 413, "POST", "/api/query", body(`{"type":"not_literal_or","tagk":"host","filter":"h0"}`), "limit of 10 points")
	// Two series, 8 points: fine.
	rs := otsQuery(t, s, "/api/query", body(`{"type":"literal_or","tagk":"host","filter":"h0|h1"}`))
	otsCheckPoints(t, "within limits", otsSingle(t, "", rs).points(t), otsPts{otsT0: 2, otsT0 + 1: 2, otsT0 + 2: 2, otsT0 + 3: 2})
	// /api/query/last obeys the series limit too.
	otsWantError(t, s, 413, "GET", "/api/query/last?timeseries=lim.m", nil, "limit of 3 series")

	// A query that runs past the time limit is a 408.
	s2 := start(t, t.TempDir(), "-query-timeout", "1ns")
	otsPutOK(t, s2, otsArr(ps...))
	otsWantError(t, s2, 408, "POST", "/api/query", body(""), "timed out")
}
