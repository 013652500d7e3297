# Longer runs than `go test ./...`; the README's two commands need none of this.
GO ?= go
FUZZTIME ?= 60s

.PHONY: test race vet bench fuzz crash build

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

# The kill -9 crash test with many more rounds than the default.
crash:
	HOURGLASS_CRASH_ROUNDS=200 $(GO) test -run TestCrash -count=1 -v ./e2e/
