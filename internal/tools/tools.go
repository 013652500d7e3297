//go:build tools

// Package tools pins modules that hourglass packages are about to import, so
// that parallel work on different packages never races on go.mod.
package tools

import (
	_ "cloud.google.com/go/bigtable"
	_ "cloud.google.com/go/bigtable/bttest"
	_ "github.com/VictoriaMetrics/fastcache"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/golang/snappy"
	_ "github.com/gorilla/mux"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/prometheus/model/labels"
	_ "github.com/prometheus/prometheus/prompb"
	_ "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	_ "github.com/prometheus/prometheus/promql"
	_ "github.com/prometheus/prometheus/promql/parser"
	_ "github.com/prometheus/prometheus/storage"
	_ "github.com/prometheus/prometheus/storage/remote"
	_ "github.com/prometheus/prometheus/tsdb/chunkenc"
)
