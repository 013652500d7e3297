package grafana

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v2"

	"hourglass/loadtest"
)

// exportedMetrics returns the metric names hourglass's Go code registers
// (`Name: "hourglass_..."` in the repository's non-test files), plus the
// Go and process collectors' names the dashboards use.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{
		"process_resident_memory_bytes": true, "process_cpu_seconds_total": true, "go_memstats_heap_inuse_bytes": true,
	}
	re := regexp.MustCompile(`Name:\s*"(hourglass_[a-z0-9_]+)"`)
	err := filepath.WalkDir(filepath.Join("..", ".."), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !names["hourglass_wal_fsyncs_total"] || !names["hourglass_http_requests_total"] {
		t.Fatalf("the scan of the Go code found too little: %v", names)
	}
	return names
}

type dashboard struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Panels []struct {
		Title      string `json:"title"`
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			RefID      string `json:"refId"`
			Expr       string `json:"expr"`
			Metric     string `json:"metric"`
			Aggregator string `json:"aggregator"`
			Filters    []struct {
				Type, Tagk, Filter string
			} `json:"filters"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestDashboards parses every dashboard and checks every query: a PromQL
// expression parses, each metric it selects is one the load generator
// writes or hourglass exports, and each label it groups by exists; an
// OpenTSDB query names a load generator metric, a known aggregator and the
// generator's tag keys.
func TestDashboards(t *testing.T) {
	exported := exportedMetrics(t)
	generated := map[string]bool{}
	for _, m := range loadtest.Metrics {
		generated[m.Name] = true
	}
	tagKeys := []string{"dc", "host", "rack", "region", "service"}
	files, err := filepath.Glob(filepath.Join("dashboards", "*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("dashboards: %v %v", files, err)
	}
	p := parser.NewParser(parser.Options{})
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Errorf("%s: no uid, title or panels", f)
		}
		queries := 0
		for _, pn := range d.Panels {
			for _, tg := range pn.Targets {
				queries++
				where := f + ": " + pn.Title + " " + tg.RefID
				switch pn.Datasource.Type {
				case "prometheus":
					expr, err := p.ParseExpr(strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m").Replace(tg.Expr))
					if err != nil {
						t.Errorf("%s: %q: %v", where, tg.Expr, err)
						continue
					}
					parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
						switch n := n.(type) {
						case *parser.VectorSelector:
							name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n.Name, "_bucket"), "_sum"), "_count")
							if !generated[n.Name] && !exported[name] {
								t.Errorf("%s: %q selects %s, which nothing writes or exports", where, tg.Expr, n.Name)
							}
						case *parser.AggregateExpr:
							for _, l := range n.Grouping {
								if l != "le" && generated[metricOf(n)] && !slices.Contains(tagKeys, l) {
									t.Errorf("%s: %q groups by %s, not a load generator tag", where, tg.Expr, l)
								}
							}
						}
						return nil
					})
				case "opentsdb":
					if !generated[tg.Metric] {
						t.Errorf("%s: metric %q is not one the load generator writes", where, tg.Metric)
					}
					if !slices.Contains([]string{"sum", "avg", "min", "max", "count", "dev", "zimsum", "mimmin", "mimmax"}, tg.Aggregator) {
						t.Errorf("%s: aggregator %q", where, tg.Aggregator)
					}
					for _, fl := range tg.Filters {
						if !slices.Contains(tagKeys, fl.Tagk) {
							t.Errorf("%s: filter on %q, not a load generator tag", where, fl.Tagk)
						}
					}
				default:
					t.Errorf("%s: data source type %q", where, pn.Datasource.Type)
				}
			}
		}
		if queries == 0 {
			t.Errorf("%s: no queries", f)
		}
	}
}

// metricOf returns the metric the aggregation's first selector selects.
func metricOf(n parser.Node) string {
	var name string
	parser.Inspect(n, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && name == "" {
			name = vs.Name
		}
		return nil
	})
	return name
}

// TestProvisioning parses the provisioning files: both data sources at
// hourglass's address, the OpenTSDB one as version 2.4, and a dashboard
// provider.
func TestProvisioning(t *testing.T) {
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, URL, Access string
			IsDefault                    bool           `yaml:"isDefault"`
			JSONData                     map[string]any `yaml:"jsonData"`
		}
	}
	b, err := os.ReadFile(filepath.Join("provisioning", "datasources", "hourglass.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, d := range ds.Datasources {
		types[d.Type] = d.UID
		if d.URL != "http://127.0.0.1:4242" || d.Access != "proxy" {
			t.Errorf("%s: url %q, access %q", d.Name, d.URL, d.Access)
		}
		if d.Type == "opentsdb" && d.JSONData["tsdbVersion"] != 4 {
			t.Errorf("%s: tsdbVersion %v, want 4 (==2.4)", d.Name, d.JSONData["tsdbVersion"])
		}
	}
	if ds.APIVersion != 1 || types["opentsdb"] != "hourglass-opentsdb" || types["prometheus"] != "hourglass-prometheus" {
		t.Errorf("data sources: %+v", ds)
	}
	var dp struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Type string
			Options    map[string]string
		}
	}
	if b, err = os.ReadFile(filepath.Join("provisioning", "dashboards", "hourglass.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &dp); err != nil {
		t.Fatal(err)
	}
	if dp.APIVersion != 1 || len(dp.Providers) != 1 || dp.Providers[0].Type != "file" || dp.Providers[0].Options["path"] == "" {
		t.Errorf("dashboard provider: %+v", dp)
	}
}
