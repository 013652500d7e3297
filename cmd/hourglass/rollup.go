package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"hourglass/series"
)

// rollupFlags binds -rollup.intervals and -rollup.retention to o.
func rollupFlags(fs *flag.FlagSet, o *series.RollupOptions) {
	fs.Func("rollup.intervals", fmt.Sprintf(`rollup intervals computed as hours settle, comma-separated, each dividing an hour or whole hours dividing a day, e.g. 10m,1h ("" turns rollups off) (default %q)`, joinDurations(o.Intervals)),
		func(s string) error {
			ivs, err := series.ParseRollupIntervals(s)
			if err != nil {
				return err
			}
			o.Intervals = ivs
			return (series.RollupOptions{Intervals: ivs}).Validate()
		})
	fs.Int64Var(&o.CacheBytes, "rollup.cache-bytes", o.CacheBytes, "bytes of rollup day cells (intervals of 1h and above) kept in memory so that each settled hour replaces its bucket without reading the day's cell back (0: read back every time)")
	fs.Func("rollup.retention", `how long each rollup interval is kept, e.g. 1h=730d,10m=30d (default: for ever; -retention never drops rollups)`,
		func(s string) error {
			r, err := series.ParseRollupRetention(s)
			o.Retention = r
			return err
		})
}

func joinDurations(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m"))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
