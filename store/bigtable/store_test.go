package bigtable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bt "cloud.google.com/go/bigtable"
	adminpb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	"cloud.google.com/go/bigtable/bttest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"hourglass/store"
	"hourglass/store/storetest"
)

// The emulator runs in the test process on loopback, behind an interceptor
// that records requests and injects faults. The tests of this package do
// not run in parallel: the faults are global (each rule names the tables it
// hits by prefix, so a stray request of another test is not affected).
var (
	emulator *bttest.Server
	faults   = &injector{rules: map[string]*rule{}}
)

func TestMain(m *testing.M) {
	if addr := os.Getenv("HOURGLASS_BENCH_EMULATOR"); addr != "" {
		// An emulator in its own process, for the benchmarks (bench_test.go).
		os.Setenv("BIGTABLE_EMULATOR_HOST", addr)
		os.Exit(m.Run())
	}
	srv, err := bttest.NewServer("127.0.0.1:0",
		grpc.MaxRecvMsgSize(64<<20),
		grpc.ChainUnaryInterceptor(faults.unary),
		grpc.ChainStreamInterceptor(faults.stream))
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the Bigtable emulator:", err)
		os.Exit(1)
	}
	emulator = srv
	// The client library's own way to find the emulator.
	os.Setenv("BIGTABLE_EMULATOR_HOST", srv.Addr)
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// injector fails requests whose table starts with a rule's prefix and counts
// the requests of each method per prefix.
type injector struct {
	mu    sync.Mutex
	rules map[string]*rule // by method's short name: "MutateRows", "ReadRows", ...
	calls map[string]int   // "prefix method" → requests seen
	seen  []proto.Message  // admin requests, for the tests that check them
}

type rule struct {
	prefix string
	code   codes.Code
	times  int  // fail this many requests; -1: all
	after  bool // apply the request, then fail (an ambiguous failure)
}

func (in *injector) set(method string, r *rule) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules[method] = r
}

func (in *injector) reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rules = map[string]*rule{}
	in.calls = nil
	in.seen = nil
}

func (in *injector) count(prefix, method string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.calls[prefix+" "+method]
}

// tableOf returns the table ID a request names.
func tableOf(req any) string {
	var name string
	switch r := req.(type) {
	case interface{ GetTableName() string }:
		name = r.GetTableName()
	case interface{ GetName() string }:
		name = r.GetName()
	case *adminpb.CreateTableRequest:
		name = r.GetTableId()
	}
	if i := strings.LastIndex(name, "/tables/"); i >= 0 {
		name = name[i+len("/tables/"):]
	}
	return name
}

// decide counts the request and says whether and how to fail it.
func (in *injector) decide(fullMethod string, req any) (fail bool, after bool, err error) {
	method := fullMethod[strings.LastIndex(fullMethod, "/")+1:]
	table := tableOf(req)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.calls == nil {
		in.calls = map[string]int{}
	}
	if p, _, ok := strings.Cut(table, "-"); ok {
		in.calls[p+" "+method]++
	}
	if m, ok := req.(proto.Message); ok && strings.Contains(fullMethod, "Admin") {
		in.seen = append(in.seen, proto.Clone(m))
	}
	r := in.rules[method]
	if r == nil || !strings.HasPrefix(table, r.prefix+"-") || r.times == 0 {
		return false, false, nil
	}
	if r.times > 0 {
		r.times--
	}
	return true, r.after, status.Errorf(r.code, "injected %s", r.code)
}

func (in *injector) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	fail, after, err := in.decide(info.FullMethod, req)
	if !fail {
		return h(ctx, req)
	}
	if after {
		h(ctx, req)
	}
	return nil, err
}

func (in *injector) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &faultStream{ServerStream: ss, in: in, method: info.FullMethod})
}

// faultStream decides on the first message of a streaming call (ReadRows,
// MutateRows), which names the table.
type faultStream struct {
	grpc.ServerStream
	in      *injector
	method  string
	decided bool
	err     error
	after   bool
}

func (f *faultStream) RecvMsg(m any) error {
	if err := f.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if !f.decided {
		f.decided = true
		var fail bool
		fail, f.after, f.err = f.in.decide(f.method, m)
		if fail && !f.after {
			return f.err
		}
		if !fail {
			f.err = nil
		}
	}
	return nil
}

func (f *faultStream) SendMsg(m any) error {
	if f.err != nil && f.after {
		// The request was applied; the answer never arrives.
		return f.err
	}
	return f.ServerStream.SendMsg(m)
}

var prefixes atomic.Int64

// newPrefix returns a table prefix no other test uses.
func newPrefix() string { return fmt.Sprintf("t%d", prefixes.Add(1)) }

var quiet = slog.New(slog.DiscardHandler)

func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Project == "" {
		opts.Project, opts.Instance = "proj", "inst"
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openTest(t, Options{TablePrefix: newPrefix()})
	})
}

func TestContractPersistent(t *testing.T) {
	storetest.RunPersistent(t, func(t *testing.T, name string) store.Store {
		h := fnv.New64a()
		h.Write([]byte(name))
		return openTest(t, Options{TablePrefix: fmt.Sprintf("p%x", h.Sum64())})
	})
}

func TestOpenCreatesTables(t *testing.T) {
	faults.reset()
	defer faults.reset()
	ctx := context.Background()
	prefix := newPrefix()
	s := openTest(t, Options{TablePrefix: prefix, SaltBuckets: 20})
	created := map[string]*adminpb.CreateTableRequest{}
	faults.mu.Lock()
	for _, m := range faults.seen {
		if r, ok := m.(*adminpb.CreateTableRequest); ok && strings.HasPrefix(r.TableId, prefix+"-") {
			created[r.TableId] = r
		}
	}
	faults.mu.Unlock()
	for _, tbl := range store.Tables {
		name := TableName(prefix, tbl)
		r := created[name]
		if r == nil {
			t.Fatalf("table %s was not created", name)
		}
		cf := r.Table.ColumnFamilies[family]
		if cf == nil || cf.GcRule.GetMaxNumVersions() != 1 {
			t.Errorf("table %s: family %q with GC rule %v, want max versions 1", name, family, cf.GetGcRule())
		}
		var splits [][]byte
		for _, sp := range r.InitialSplits {
			splits = append(splits, sp.Key)
		}
		if tbl != store.TableData && tbl != store.TableRollup {
			if len(splits) != 0 {
				t.Errorf("table %s pre-split at %q, want no splits", name, splits)
			}
			continue
		}
		if len(splits) != 19 {
			t.Fatalf("%s table split at %d keys, want 19 (20 salt buckets)", tbl, len(splits))
		}
		for i, k := range splits {
			if !bytes.Equal(k, []byte{byte(i + 1)}) {
				t.Fatalf("split %d is %x, want %02x", i, k, i+1)
			}
		}
	}
	if err := s.Write(ctx, store.TableData, []store.Mutation{{Row: []byte("r"), Qualifier: []byte("q"), Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Opening again creates nothing and finds the data.
	faults.reset()
	s = openTest(t, Options{TablePrefix: prefix, SaltBuckets: 20})
	if n := faults.count(prefix, "CreateTable"); n != 0 {
		t.Fatalf("reopening created %d tables", n)
	}
	cells, err := s.ReadRow(ctx, store.TableData, []byte("r"))
	if err != nil || len(cells) != 1 || string(cells[0].Value) != "v" {
		t.Fatalf("ReadRow after reopen = %v, %v", cells, err)
	}
}

// TestOpenAddsFamily opens tables that exist without the column family.
func TestOpenAddsFamily(t *testing.T) {
	ctx := context.Background()
	prefix := newPrefix()
	admin, err := bt.NewAdminClient(ctx, "proj", "inst")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, tbl := range store.Tables {
		if err := admin.CreateTable(ctx, TableName(prefix, tbl)); err != nil {
			t.Fatal(err)
		}
	}
	s := openTest(t, Options{TablePrefix: prefix})
	for _, tbl := range store.Tables {
		info, err := admin.TableInfo(ctx, TableName(prefix, tbl))
		if err != nil {
			t.Fatal(err)
		}
		if len(info.FamilyInfos) != 1 || info.FamilyInfos[0].Name != family {
			t.Fatalf("table %s has families %v, want %q", tbl, info.FamilyInfos, family)
		}
	}
	if err := s.Write(ctx, store.TableMeta, []store.Mutation{{Row: []byte("r"), Qualifier: []byte("q"), Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	for _, opts := range []Options{
		{Instance: "i"},
		{Project: "p"},
		{Project: "p", Instance: "i", TablePrefix: "-x"},
		{Project: "p", Instance: "i", TablePrefix: "a b"},
		{Project: "p", Instance: "i", TablePrefix: strings.Repeat("x", 45)},
	} {
		if s, err := Open(context.Background(), opts); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", opts)
		}
	}
}

// TestOneVersion checks that reads see only the newest version of a cell
// and that Write leaves exactly one, however many the cell had.
func TestOneVersion(t *testing.T) {
	ctx := context.Background()
	prefix := newPrefix()
	s := openTest(t, Options{TablePrefix: prefix})
	client, err := bt.NewClient(ctx, "proj", "inst")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	raw := client.Open(TableName(prefix, store.TableUID))
	// Three versions, the newest in the middle of the writes, as clock
	// skew or ReadModifyWrite can leave them.
	for _, v := range []struct {
		ts  time.Time
		val string
	}{{time.Unix(100, 0), "old"}, {time.Unix(300, 0), "newest"}, {time.Unix(200, 0), "middle"}} {
		m := bt.NewMutation()
		m.Set(family, "q", bt.Time(v.ts), []byte(v.val))
		if err := raw.Apply(ctx, "row", m); err != nil {
			t.Fatal(err)
		}
	}
	cells, err := s.ReadRow(ctx, store.TableUID, []byte("row"))
	if err != nil || len(cells) != 1 || string(cells[0].Value) != "newest" {
		t.Fatalf("ReadRow = %q, %v; want the newest version only", cells, err)
	}
	var scanned []string
	if err := s.Scan(ctx, store.TableUID, []store.KeyRange{{}}, func(c store.Cell) bool {
		scanned = append(scanned, string(c.Value))
		return true
	}); err != nil || len(scanned) != 1 || scanned[0] != "newest" {
		t.Fatalf("Scan = %q, %v; want the newest version only", scanned, err)
	}
	// A counter incremented, then written, then incremented: each step
	// counts from the value before it, whatever the timestamps.
	if _, err := s.Increment(ctx, store.TableUID, []byte("ctr"), []byte("n"), 5); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, store.TableUID, []store.Mutation{{Row: []byte("row"), Qualifier: []byte("q"), Value: []byte("written")},
		{Row: []byte("ctr"), Qualifier: []byte("n"), Value: []byte{0, 0, 0, 0, 0, 0, 0, 100}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Increment(ctx, store.TableUID, []byte("ctr"), []byte("n"), 1); err != nil || n != 101 {
		t.Fatalf("Increment after Write = %d, %v; want 101", n, err)
	}
	r, err := raw.ReadRow(ctx, "row")
	if err != nil {
		t.Fatal(err)
	}
	if items := r[family]; len(items) != 1 || string(items[0].Value) != "written" {
		t.Fatalf("after Write the cell has %d versions (%v), want exactly the written one", len(items), items)
	}
}

func TestWriteRetriesTransientErrors(t *testing.T) {
	faults.reset()
	defer faults.reset()
	ctx := context.Background()
	prefix := newPrefix()
	s := openTest(t, Options{TablePrefix: prefix})
	faults.set("MutateRows", &rule{prefix: prefix, code: codes.Unavailable, times: 2})
	if err := s.Write(ctx, store.TableData, []store.Mutation{{Row: []byte("r"), Qualifier: []byte("q"), Value: []byte("v")}}); err != nil {
		t.Fatalf("Write through two Unavailable answers: %v", err)
	}
	if n := faults.count(prefix, "MutateRows"); n != 3 {
		t.Fatalf("%d MutateRows requests, want 3 (two failed, one retried to success)", n)
	}
	faults.set("ReadRows", &rule{prefix: prefix, code: codes.Unavailable, times: 2})
	cells, err := s.ReadRow(ctx, store.TableData, []byte("r"))
	if err != nil || len(cells) != 1 {
		t.Fatalf("ReadRow through two Unavailable answers = %v, %v", cells, err)
	}
	// A permanent error is not retried and is not "unavailable".
	faults.set("MutateRows", &rule{prefix: prefix, code: codes.InvalidArgument, times: 1})
	before := faults.count(prefix, "MutateRows")
	err = s.Write(ctx, store.TableData, []store.Mutation{{Row: []byte("r"), Qualifier: []byte("q"), Value: []byte("w")}})
	if err == nil || errors.Is(err, store.ErrUnavailable) || status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Write with InvalidArgument = %v, want that error, not unavailable", err)
	}
	if n := faults.count(prefix, "MutateRows") - before; n != 1 {
		t.Fatalf("a permanent error was sent %d times", n)
	}
}

// TestPutIfAbsentAmbiguous makes the first CheckAndMutateRow land on the
// server and its answer fail: the retry finds its own value, which is a put.
func TestPutIfAbsentAmbiguous(t *testing.T) {
	faults.reset()
	defer faults.reset()
	ctx := context.Background()
	prefix := newPrefix()
	s := openTest(t, Options{TablePrefix: prefix})
	faults.set("CheckAndMutateRow", &rule{prefix: prefix, code: codes.Unavailable, times: 1, after: true})
	written, existing, err := s.PutIfAbsent(ctx, store.TableUID, []byte("name"), []byte("id"), []byte("mine"))
	if err != nil || !written {
		t.Fatalf("PutIfAbsent with a lost answer = %v, %q, %v; want written", written, existing, err)
	}
	if n := faults.count(prefix, "CheckAndMutateRow"); n != 2 {
		t.Fatalf("%d CheckAndMutateRow requests, want 2", n)
	}
	written, existing, err = s.PutIfAbsent(ctx, store.TableUID, []byte("name"), []byte("id"), []byte("theirs"))
	if err != nil || written || string(existing) != "mine" {
		t.Fatalf("PutIfAbsent of a present cell = %v, %q, %v; want not written, %q", written, existing, err, "mine")
	}
	// Increment is not retried: a lost answer is an error, and the
	// counter moved once.
	faults.set("ReadModifyWriteRow", &rule{prefix: prefix, code: codes.Unavailable, times: 1, after: true})
	if _, err := s.Increment(ctx, store.TableUID, []byte("ctr"), []byte("n"), 1); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Increment with a lost answer = %v, want store.ErrUnavailable", err)
	}
	if n, err := s.Increment(ctx, store.TableUID, []byte("ctr"), []byte("n"), 1); err != nil || n != 2 {
		t.Fatalf("Increment = %d, %v; want 2 (the lost one counted once)", n, err)
	}
}

// TestOutage fails every request: each operation gives up within the
// timeout with store.ErrUnavailable, and a cancelled caller gets its own
// error.
func TestOutage(t *testing.T) {
	faults.reset()
	defer faults.reset()
	ctx := context.Background()
	prefix := newPrefix()
	s := openTest(t, Options{TablePrefix: prefix, Timeout: 300 * time.Millisecond})
	for _, m := range []string{"MutateRows", "ReadRows", "CheckAndMutateRow", "ReadModifyWriteRow", "DropRowRange"} {
		faults.set(m, &rule{prefix: prefix, code: codes.Unavailable, times: -1})
	}
	row, q := []byte("r"), []byte("q")
	ops := map[string]func(ctx context.Context) error{
		"Write": func(ctx context.Context) error {
			return s.Write(ctx, store.TableData, []store.Mutation{{Row: row, Qualifier: q, Value: q}})
		},
		"Scan": func(ctx context.Context) error {
			return s.Scan(ctx, store.TableData, []store.KeyRange{{}}, func(store.Cell) bool { return true })
		},
		"ReadRow": func(ctx context.Context) error { _, err := s.ReadRow(ctx, store.TableData, row); return err },
		"Increment": func(ctx context.Context) error {
			_, err := s.Increment(ctx, store.TableUID, row, []byte("n"), 1)
			return err
		},
		"PutIfAbsent": func(ctx context.Context) error {
			_, _, err := s.PutIfAbsent(ctx, store.TableUID, row, q, q)
			return err
		},
		"DeleteRange": func(ctx context.Context) error {
			return s.DeleteRange(ctx, store.TableData, store.KeyRange{Start: []byte("a"), End: []byte("b")})
		},
		"DropRange": func(ctx context.Context) error {
			return s.DeleteRange(ctx, store.TableData, store.PrefixRange([]byte("a")))
		},
	}
	for name, op := range ops {
		if err := op(ctx); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s during an outage = %v, want store.ErrUnavailable", name, err)
		}
		if name == "Increment" {
			continue // not retried: it fails at once, before any deadline
		}
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		err := op(cctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the caller's deadline passed = %v, want context.DeadlineExceeded", name, err)
		}
	}
	// The outage ends: everything works again.
	faults.reset()
	for name, op := range ops {
		if err := op(ctx); err != nil {
			t.Errorf("%s after the outage: %v", name, err)
		}
	}
}

// TestScanSplitsLargeRowSets scans more exact-row ranges than fit in one
// ReadRows request.
func TestScanSplitsLargeRowSets(t *testing.T) {
	faults.reset()
	defer faults.reset()
	ctx := context.Background()
	prefix := newPrefix()
	s := openTest(t, Options{TablePrefix: prefix})
	key := func(i int) []byte { return fmt.Appendf(nil, "%0100d", i) } // 100-byte keys
	var muts []store.Mutation
	for i := 0; i < 4000; i += 2 {
		muts = append(muts, store.Mutation{Row: key(i), Qualifier: []byte("q"), Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := s.Write(ctx, store.TableData, muts); err != nil {
		t.Fatal(err)
	}
	var ranges []store.KeyRange
	for i := 0; i < 4000; i++ {
		ranges = append(ranges, store.RowRange(key(i)))
	}
	before := faults.count(prefix, "ReadRows")
	var got []string
	if err := s.Scan(ctx, store.TableData, ranges, func(c store.Cell) bool {
		got = append(got, string(c.Value))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if n := faults.count(prefix, "ReadRows") - before; n < 2 {
		t.Fatalf("%d ReadRows requests for %d KiB of keys, want the row set split", n, 4000*217/1024)
	}
	if len(got) != 2000 {
		t.Fatalf("scanned %d cells, want 2000", len(got))
	}
	for i, v := range got {
		if v != fmt.Sprint(2*i) {
			t.Fatalf("cell %d is %s, want %d: out of order", i, v, 2*i)
		}
	}
}

// TestWriteSplitsLargeBatches writes more than one request may carry.
func TestWriteSplitsLargeBatches(t *testing.T) {
	faults.reset()
	defer faults.reset()
	ctx := context.Background()
	prefix := newPrefix()
	s := openTest(t, Options{TablePrefix: prefix})
	value := bytes.Repeat([]byte("x"), 1<<20)
	var muts []store.Mutation
	for i := 0; i < 20; i++ {
		muts = append(muts, store.Mutation{Row: fmt.Appendf(nil, "row%02d", i), Qualifier: []byte("q"), Value: value})
	}
	if err := s.Write(ctx, store.TableData, muts); err != nil {
		t.Fatal(err)
	}
	if n := faults.count(prefix, "MutateRows"); n < 3 {
		t.Fatalf("20 MiB written in %d MutateRows requests, want at least 3 of at most 8 MiB", n)
	}
	n := 0
	if err := s.Scan(ctx, store.TableData, []store.KeyRange{{}}, func(c store.Cell) bool {
		if !bytes.Equal(c.Value, value) {
			t.Fatalf("row %s: value of %d bytes", c.Row, len(c.Value))
		}
		n++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if n != 20 {
		t.Fatalf("%d rows back, want 20", n)
	}
}

// TestDeleteRangeMethods checks which request each kind of range uses, and
// the fallback to row deletes when DropRowRange is refused.
func TestDeleteRangeMethods(t *testing.T) {
	faults.reset()
	defer faults.reset()
	ctx := context.Background()
	prefix := newPrefix()
	s := openTest(t, Options{TablePrefix: prefix})
	fill := func() {
		var muts []store.Mutation
		for _, r := range []string{"a", "ab", "ab\x00", "ab\xff", "ac", "b"} {
			muts = append(muts, store.Mutation{Row: []byte(r), Qualifier: []byte("q"), Value: []byte(r)})
		}
		if err := s.Write(ctx, store.TableData, muts); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() string {
		var out []string
		if err := s.Scan(ctx, store.TableData, []store.KeyRange{{}}, func(c store.Cell) bool {
			out = append(out, fmt.Sprintf("%q", c.Row))
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		name       string
		r          store.KeyRange
		drop       bool
		wantRemain string
	}{
		{"Prefix", store.PrefixRange([]byte("ab")), true, `"a" "ac" "b"`},
		{"All", store.KeyRange{}, true, ``},
		{"NotAPrefix", store.KeyRange{Start: []byte("ab"), End: []byte("ac\x00")}, false, `"a" "b"`},
		{"Unbounded", store.KeyRange{Start: []byte("ab\x00")}, false, `"a" "ab"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fill()
			drops, muts := faults.count(prefix, "DropRowRange"), faults.count(prefix, "MutateRows")
			if err := s.DeleteRange(ctx, store.TableData, tc.r); err != nil {
				t.Fatal(err)
			}
			gotDrop := faults.count(prefix, "DropRowRange") > drops
			gotMut := faults.count(prefix, "MutateRows") > muts
			if gotDrop != tc.drop || gotMut == tc.drop {
				t.Fatalf("DropRowRange used: %v, row deletes used: %v; want DropRowRange %v", gotDrop, gotMut, tc.drop)
			}
			if got := rows(); got != tc.wantRemain {
				t.Fatalf("rows left %s, want %s", got, tc.wantRemain)
			}
		})
	}
	// DropRowRange refused: the prefix is deleted row by row, and
	// DropRowRange is not tried again.
	faults.set("DropRowRange", &rule{prefix: prefix, code: codes.PermissionDenied, times: -1})
	fill()
	if err := s.DeleteRange(ctx, store.TableData, store.PrefixRange([]byte("ab"))); err != nil {
		t.Fatal(err)
	}
	if got := rows(); got != `"a" "ac" "b"` {
		t.Fatalf("rows left after the fallback: %s", got)
	}
	drops := faults.count(prefix, "DropRowRange")
	if err := s.DeleteRange(ctx, store.TableData, store.PrefixRange([]byte("a"))); err != nil {
		t.Fatal(err)
	}
	if faults.count(prefix, "DropRowRange") != drops {
		t.Fatal("DropRowRange tried again after a PermissionDenied")
	}
	if got := rows(); got != `"b"` {
		t.Fatalf("rows left: %s", got)
	}
}

// TestDeleteRangeBatches deletes more rows than one batch.
func TestDeleteRangeBatches(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{TablePrefix: newPrefix()})
	defer func(n int) { deleteBatch = n }(deleteBatch)
	deleteBatch = 7
	var muts []store.Mutation
	for i := 0; i < 50; i++ {
		muts = append(muts, store.Mutation{Row: fmt.Appendf(nil, "r%03d", i), Qualifier: []byte("q"), Value: []byte("v")})
	}
	if err := s.Write(ctx, store.TableData, muts); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(ctx, store.TableData, store.KeyRange{Start: []byte("r005"), End: []byte("r045")}); err != nil {
		t.Fatal(err)
	}
	var left []string
	if err := s.Scan(ctx, store.TableData, []store.KeyRange{{}}, func(c store.Cell) bool {
		left = append(left, string(c.Row))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(left) != 10 || left[4] != "r004" || left[5] != "r045" {
		t.Fatalf("rows left: %v; want r000-r004 and r045-r049", left)
	}
}

func TestSplitKeys(t *testing.T) {
	if k := SplitKeys(1); k != nil {
		t.Errorf("SplitKeys(1) = %q, want none", k)
	}
	k := SplitKeys(256)
	if len(k) != 255 || k[0] != "\x01" || k[254] != "\xff" {
		t.Errorf("SplitKeys(256) = %d keys, first %q last %q", len(k), k[0], k[len(k)-1])
	}
}
