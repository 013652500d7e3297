# Longer runs than `go test ./...`; the README's two commands need none of this.
GO ?= go
FUZZTIME ?= 60s

.PHONY: test race vet bench fuzz crash crash-100 soak build rollup-bench

build:
	$(GO) build -o hourglass ./cmd/hourglass

test:
	$(GO) test ./...

race:
	$(GO) test -race ./...

vet:
	$(GO) vet ./...

# Benchmarks whose figures docs/benchmarks.md records.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./chunk/ ./rowkey/ ./series/... ./store/... ./api/opentsdb/ ./downsample/

# Every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# The kill -9 crash test with many more rounds than go test's 20 (ROUNDS,
# default 100: issue 11); 100 rounds took 162 s here (docs/benchmarks.md).
ROUNDS ?= 100
crash:
	HOURGLASS_CRASH_ROUNDS=$(ROUNDS) $(GO) test -run '^TestCrash$$' -count=1 -timeout 90m -v ./e2e/

crash-100:
	$(MAKE) crash ROUNDS=100

# The soak: the maximum ingest of the soak's own writer measured flat out
# (live timestamps, the query mix running) for SOAK_MEASURE after an untimed
# SOAK_MEASURE_WARMUP, then writes paced at 80 % of it with live timestamps
# and the query mix (both dialects) for SOAK_DURATION, the server's RSS
# sampled; fails on any error, writes under 95 % of the target, or RSS growth
# after the warm-up (the longest query range, 10 minutes, so that every
# query's range holds the soak's data alone; then until the block cache is
# full). 20 minutes of soak, 10 judged; about 25 in all. See loadtest/soak.sh
# and docs/benchmarks.md.
SOAK_DURATION ?= 20m
SOAK_MEASURE ?= 60s
soak:
	SOAK_DURATION=$(SOAK_DURATION) SOAK_MEASURE=$(SOAK_MEASURE) loadtest/soak.sh

# Issue 13's rollup benchmark at its scale (loadtest/rollup.sh): 5,000
# series x 30 days at ROLLUP_INTERVAL backfilled with rollups and again
# without, the server restarted, the 1h-avg dashboard query from rollups
# and with ROLLUP_RAW, ingest CPU and disk of both; every process under
# ulimit -v 4000000. 60s: ~10 minutes a backfill here (docs/benchmarks.md).
ROLLUP_OUT ?= /tmp/hourglass-rollup-bench
ROLLUP_INTERVAL ?= 60s
rollup-bench:
	INTERVAL=$(ROLLUP_INTERVAL) RAW=1 loadtest/rollup.sh $(ROLLUP_OUT)
