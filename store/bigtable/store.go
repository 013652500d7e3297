package bigtable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync/atomic"
	"time"

	bt "cloud.google.com/go/bigtable"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"hourglass/store"
)

// family is the one column family of every table.
const family = "c"

// columnPrefix is how the client names a column of the family: "c:" | qualifier.
const columnPrefix = family + ":"

const (
	// maxWriteBytes bounds the bytes of one MutateRows request Write sends.
	maxWriteBytes = 8 << 20
	// maxRowSetBytes bounds the keys of one ReadRows request: Bigtable
	// refuses requests past 512 KiB.
	maxRowSetBytes = 256 << 10
	// DefaultTablePrefix is the table prefix when Options.TablePrefix is empty.
	DefaultTablePrefix = "hourglass"
	// DefaultTimeout is Options.Timeout's default.
	DefaultTimeout = 30 * time.Second
)

// deleteBatch is how many rows DeleteRange deletes per MutateRows call (a
// variable for tests).
var deleteBatch = 10000

// Options configures Open.
type Options struct {
	// Project and Instance name the Bigtable instance. Both are required;
	// the emulator (BIGTABLE_EMULATOR_HOST) accepts any values.
	Project, Instance string
	// TablePrefix starts the name of every table: <prefix>-data,
	// <prefix>-uid, <prefix>-index, <prefix>-meta. Default "hourglass".
	TablePrefix string
	// AppProfile is the app profile of every data request (empty: the
	// instance's default). With replication it must route to a single
	// cluster and allow single-row transactions.
	AppProfile string
	// SaltBuckets, when above 1, pre-splits a data table created by Open at
	// the salt bucket boundaries: one tablet per bucket.
	SaltBuckets int
	// Timeout bounds each operation (a Scan: the time without a row
	// arriving) when the caller's context allows longer; past it the
	// operation fails with store.ErrUnavailable. Default 30 s.
	Timeout time.Duration
	// ClientOptions are passed to the data and admin clients: credentials
	// (option.WithAuthCredentialsFile), an endpoint, a gRPC connection.
	// Without them the client uses Application Default Credentials, or the
	// emulator named by BIGTABLE_EMULATOR_HOST.
	ClientOptions []option.ClientOption
	// Logger receives what the store has to say. Default slog.Default().
	Logger *slog.Logger
}

// Store is a store.Store on Bigtable. It is safe for concurrent use.
type Store struct {
	client  *bt.Client
	admin   *bt.AdminClient
	names   map[store.Table]string
	tables  map[store.Table]*bt.Table
	timeout time.Duration
	log     *slog.Logger

	// guard refuses operations once Close has begun and lets Close wait
	// for those under way.
	guard store.Guard

	// noDrop is set once DropRowRange has been refused (no permission):
	// DeleteRange then deletes rows one by one.
	noDrop atomic.Bool
}

var _ store.Store = (*Store)(nil)

var (
	errEmptyRow  = errors.New("store/bigtable: empty row key")
	tablePrefixR = regexp.MustCompile(`^[_a-zA-Z0-9][-_.a-zA-Z0-9]*$`)
)

// TableName returns the Bigtable table ID of t under prefix.
func TableName(prefix string, t store.Table) string {
	if prefix == "" {
		prefix = DefaultTablePrefix
	}
	return prefix + "-" + t.String()
}

// Open connects to the instance, creates the tables and the column family
// where they are missing, and returns the store.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Project == "" || opts.Instance == "" {
		return nil, errors.New("store/bigtable: a project and an instance are required")
	}
	if opts.TablePrefix == "" {
		opts.TablePrefix = DefaultTablePrefix
	}
	// Table IDs: [_a-zA-Z0-9][-_.a-zA-Z0-9]*, at most 50 characters.
	if !tablePrefixR.MatchString(opts.TablePrefix) || len(TableName(opts.TablePrefix, store.TableIndex)) > 50 {
		return nil, fmt.Errorf("store/bigtable: table prefix %q: must match [_a-zA-Z0-9][-_.a-zA-Z0-9]* and leave table names of at most 50 characters", opts.TablePrefix)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// The clients' background work (the connection pool's redials, among
	// others) lives as long as the context they are made with: not the
	// caller's, which ends at shutdown, while the head still writes to the
	// store, but one that only Close ends.
	cctx := context.WithoutCancel(ctx)
	client, err := bt.NewClientWithConfig(cctx, opts.Project, opts.Instance, bt.ClientConfig{AppProfile: opts.AppProfile}, opts.ClientOptions...)
	if err != nil {
		return nil, fmt.Errorf("store/bigtable: connecting to %s/%s: %w", opts.Project, opts.Instance, err)
	}
	admin, err := bt.NewAdminClient(cctx, opts.Project, opts.Instance, opts.ClientOptions...)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("store/bigtable: connecting to the admin API of %s/%s: %w", opts.Project, opts.Instance, err)
	}
	s := &Store{
		client:  client,
		admin:   admin,
		names:   map[store.Table]string{},
		tables:  map[store.Table]*bt.Table{},
		timeout: opts.Timeout,
		log:     opts.Logger,
	}
	for _, t := range store.Tables {
		name := TableName(opts.TablePrefix, t)
		s.names[t] = name
		s.tables[t] = client.Open(name)
	}
	if err := s.ensureTables(ctx, opts.SaltBuckets); err != nil {
		s.closeClients()
		return nil, err
	}
	return s, nil
}

func (s *Store) closeClients() error {
	return errors.Join(s.client.Close(), s.admin.Close())
}

// enter registers an operation, or returns store.ErrClosed (store.Guard).
func (s *Store) enter() error { return s.guard.Enter() }

func (s *Store) leave() { s.guard.Leave() }

// begin checks what every table operation checks first.
func (s *Store) begin(ctx context.Context, t store.Table) (*bt.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tbl := s.tables[t]
	if tbl == nil {
		return nil, fmt.Errorf("store/bigtable: unknown table %s", t)
	}
	return tbl, nil
}

// Close waits for the operations under way, then closes the clients. A
// second Close returns store.ErrClosed.
func (s *Store) Close() error {
	if err := s.guard.Close(); err != nil {
		return err
	}
	if err := s.closeClients(); err != nil {
		return fmt.Errorf("store/bigtable: close: %w", err)
	}
	return nil
}

// opContext bounds one operation by the store's timeout.
func (s *Store) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// transient reports the codes after which the same request may succeed.
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted, codes.Canceled:
		return true
	}
	return false
}

// fail turns an error of a Bigtable call into the store's: the caller's
// context error when the caller gave up, store.ErrUnavailable around what a
// retry may cure (a retryable code, or the store's own timeout), the error
// as it is otherwise.
func fail(caller, op context.Context, what string, t store.Table, err error) error {
	if cerr := caller.Err(); cerr != nil {
		return fmt.Errorf("store/bigtable: %s %s: %w", what, t, cerr)
	}
	if op.Err() != nil || transient(err) {
		return fmt.Errorf("%w: store/bigtable: %s %s: %w", store.ErrUnavailable, what, t, err)
	}
	return fmt.Errorf("store/bigtable: %s %s: %w", what, t, err)
}

// backoff sleeps before retry attempt n (0-based): 50 ms doubling up to
// 2 s. It returns the context's error if the context ends first.
func backoff(ctx context.Context, n int) error {
	d := min(50*time.Millisecond<<min(n, 6), 2*time.Second)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Write applies the mutations with MutateRows: the mutations of a row, in
// order, form one entry (atomic), entries go in requests of at most 8 MiB.
// Setting a cell deletes every version it has first, in the same entry, so
// the cell has exactly the value written. Each mutation carries an explicit
// timestamp, so the client retries entries that fail with a retryable code;
// Write retries what is left until the timeout.
func (s *Store) Write(ctx context.Context, t store.Table, muts []store.Mutation) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	tbl, err := s.begin(ctx, t)
	if err != nil {
		return err
	}
	if len(muts) == 0 {
		return nil
	}
	ts := bt.Now().TruncateToMilliseconds()
	var (
		keys    []string
		entries []*bt.Mutation
		sizes   []int
		byRow   = make(map[string]int, len(muts))
	)
	for i := range muts {
		m := &muts[i]
		if len(m.Row) == 0 {
			return fmt.Errorf("%w (mutation %d of %d, table %s)", errEmptyRow, i, len(muts), t)
		}
		e, ok := byRow[string(m.Row)]
		if !ok {
			e = len(keys)
			keys = append(keys, string(m.Row))
			entries = append(entries, bt.NewMutation())
			sizes = append(sizes, len(m.Row)+16)
			byRow[keys[e]] = e
		}
		q := string(m.Qualifier)
		entries[e].DeleteCellsInColumn(family, q)
		sizes[e] += len(q) + 16
		if !m.Delete {
			entries[e].Set(family, q, ts, m.Value)
			sizes[e] += len(q) + len(m.Value) + 24
		}
	}
	opctx, cancel := s.opContext(ctx)
	defer cancel()
	for start := 0; start < len(keys); {
		end, size := start, 0
		for end < len(keys) && (end == start || size+sizes[end] <= maxWriteBytes) {
			size += sizes[end]
			end++
		}
		if err := s.applyBulk(ctx, opctx, tbl, t, "write", keys[start:end], entries[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// applyBulk sends entries with ApplyBulk, retrying those that failed with
// a retryable code until opctx ends.
func (s *Store) applyBulk(ctx, opctx context.Context, tbl *bt.Table, t store.Table, what string, keys []string, entries []*bt.Mutation) error {
	for attempt := 0; ; attempt++ {
		errs, err := tbl.ApplyBulk(opctx, keys, entries)
		if err == nil && errs == nil {
			return nil
		}
		if err == nil {
			// Keep the entries that failed; try them again if a retry can help.
			var k2 []string
			var e2 []*bt.Mutation
			for i, e := range errs {
				if e == nil {
					continue
				}
				if err == nil || (transient(err) && !transient(e)) {
					err = e // report a permanent error over a transient one
				}
				k2, e2 = append(k2, keys[i]), append(e2, entries[i])
			}
			keys, entries = k2, e2
		}
		if !transient(err) || opctx.Err() != nil {
			return fail(ctx, opctx, what, t, fmt.Errorf("%d rows not written: %w", len(keys), err))
		}
		if berr := backoff(opctx, attempt); berr != nil {
			return fail(ctx, opctx, what, t, fmt.Errorf("%d rows not written: %w", len(keys), err))
		}
	}
}

// latest keeps the newest version of each cell. A cell has one version
// except briefly after ReadModifyWrite (until garbage collection).
var latest = bt.RowFilter(bt.LatestNFilter(1))

// ReadRow returns the cells of one row, copied into one buffer the caller owns.
func (s *Store) ReadRow(ctx context.Context, t store.Table, row []byte) ([]store.Cell, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	tbl, err := s.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	if len(row) == 0 {
		return nil, errEmptyRow
	}
	opctx, cancel := s.opContext(ctx)
	defer cancel()
	r, err := tbl.ReadRow(opctx, string(row), latest)
	if err != nil {
		return nil, fail(ctx, opctx, "read row", t, err)
	}
	items := r[family]
	if len(items) == 0 {
		return nil, nil
	}
	n := 0
	for i := range items {
		n += len(row) + len(items[i].Column) - len(columnPrefix) + len(items[i].Value)
	}
	arena := make([]byte, 0, n)
	cells := make([]store.Cell, len(items))
	for i := range items {
		it := &items[i]
		a := len(arena)
		arena = append(arena, row...)
		b := len(arena)
		arena = append(arena, it.Column[len(columnPrefix):]...)
		c := len(arena)
		arena = append(arena, it.Value...)
		d := len(arena)
		cells[i] = store.Cell{Row: arena[a:b:b], Qualifier: arena[b:c:c], Value: arena[c:d:d]}
	}
	return cells, nil
}

// Increment is one ReadModifyWriteRow with an increment rule. It is not
// retried: if the request failed after the server applied it, a retry
// would add delta twice.
func (s *Store) Increment(ctx context.Context, t store.Table, row, qualifier []byte, delta int64) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	tbl, err := s.begin(ctx, t)
	if err != nil {
		return 0, err
	}
	if len(row) == 0 {
		return 0, errEmptyRow
	}
	opctx, cancel := s.opContext(ctx)
	defer cancel()
	rmw := bt.NewReadModifyWrite()
	rmw.Increment(family, string(qualifier), delta)
	r, err := tbl.ApplyReadModifyWrite(opctx, string(row), rmw)
	if err != nil {
		return 0, fail(ctx, opctx, fmt.Sprintf("increment row %q qualifier %q", row, qualifier), t, err)
	}
	col := columnPrefix + string(qualifier)
	for _, it := range r[family] {
		if it.Column == col {
			if len(it.Value) != 8 {
				return 0, fmt.Errorf("store/bigtable: increment %s row %q qualifier %q: the server returned %d bytes", t, row, qualifier, len(it.Value))
			}
			return int64(binary.BigEndian.Uint64(it.Value)), nil
		}
	}
	return 0, fmt.Errorf("store/bigtable: increment %s row %q qualifier %q: the server returned no value", t, row, qualifier)
}

// exactly is a filter that matches the cell of qualifier q, and no other.
func exactly(q []byte) bt.Filter {
	return bt.ColumnRangeFilter(family, string(q), string(q)+"\x00")
}

// PutIfAbsent is CheckAndMutateRow: the predicate matches the cell, the
// put is the mutation applied when it does not match. When it matched, the
// existing value is read (nil if the cell went in between). A request
// that fails with a retryable code is sent again; if that finds exactly
// the value it tried to put, the first attempt landed and it reports the
// put as written.
func (s *Store) PutIfAbsent(ctx context.Context, t store.Table, row, qualifier, value []byte) (bool, []byte, error) {
	if err := s.enter(); err != nil {
		return false, nil, err
	}
	defer s.leave()
	tbl, err := s.begin(ctx, t)
	if err != nil {
		return false, nil, err
	}
	if len(row) == 0 {
		return false, nil, errEmptyRow
	}
	opctx, cancel := s.opContext(ctx)
	defer cancel()
	what := fmt.Sprintf("put if absent row %q qualifier %q", row, qualifier)
	put := bt.NewMutation()
	put.Set(family, string(qualifier), bt.Now().TruncateToMilliseconds(), value)
	cond := bt.NewCondMutation(exactly(qualifier), nil, put)
	retried := false
	for attempt := 0; ; attempt++ {
		var matched bool
		err := tbl.Apply(opctx, string(row), cond, bt.GetCondMutationResult(&matched))
		if err == nil {
			if !matched {
				return true, nil, nil
			}
			existing, err := s.readCell(opctx, tbl, row, qualifier)
			if err != nil {
				return false, nil, fail(ctx, opctx, what, t, err)
			}
			if retried && existing != nil && bytes.Equal(existing, value) {
				return true, nil, nil
			}
			return false, existing, nil
		}
		if !transient(err) || opctx.Err() != nil {
			return false, nil, fail(ctx, opctx, what, t, err)
		}
		retried = true
		if berr := backoff(opctx, attempt); berr != nil {
			return false, nil, fail(ctx, opctx, what, t, err)
		}
	}
}

// readCell returns the newest value of one cell, or nil if there is none.
func (s *Store) readCell(ctx context.Context, tbl *bt.Table, row, qualifier []byte) ([]byte, error) {
	r, err := tbl.ReadRow(ctx, string(row), bt.RowFilter(bt.ChainFilters(exactly(qualifier), bt.LatestNFilter(1))))
	if err != nil {
		return nil, err
	}
	col := columnPrefix + string(qualifier)
	for _, it := range r[family] {
		if it.Column == col {
			return append([]byte{}, it.Value...), nil
		}
	}
	return nil, nil
}

// DeleteRange drops the rows of the range: with DropRowRange when it is a
// whole table or the rows of one prefix, by reading the keys (keys only,
// filtered on the server) and deleting those rows otherwise.
func (s *Store) DeleteRange(ctx context.Context, t store.Table, r store.KeyRange) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	tbl, err := s.begin(ctx, t)
	if err != nil {
		return err
	}
	if r.Empty() {
		return nil
	}
	opctx, cancel := s.opContext(ctx)
	defer cancel()
	prefix := len(r.Start) > 0 && bytes.Equal(store.PrefixEnd(r.Start), r.End)
	whole := len(r.Start) == 0 && len(r.End) == 0
	if (prefix || whole) && !s.noDrop.Load() {
		err := s.drop(opctx, t, r.Start)
		switch code := status.Code(err); {
		case err == nil:
			return nil
		case code == codes.PermissionDenied || code == codes.Unimplemented:
			s.noDrop.Store(true)
			s.log.Warn("DropRowRange refused; deleting row ranges row by row from now on", "table", s.names[t], "err", err)
		default:
			return fail(ctx, opctx, "delete range", t, err)
		}
	}
	return s.deleteRows(ctx, opctx, tbl, t, r)
}

// drop is DropRowRange of the prefix, or of the whole table when the
// prefix is empty, retried on retryable codes (it is idempotent).
func (s *Store) drop(ctx context.Context, t store.Table, prefix []byte) error {
	for attempt := 0; ; attempt++ {
		var err error
		if len(prefix) == 0 {
			err = s.admin.DropAllRows(ctx, s.names[t])
		} else {
			err = s.admin.DropRowRange(ctx, s.names[t], string(prefix))
		}
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		if berr := backoff(ctx, attempt); berr != nil {
			return err
		}
	}
}

// keysOnly makes ReadRows return row keys only: one cell per row, no value.
var keysOnly = bt.RowFilter(bt.ChainFilters(bt.CellsPerRowLimitFilter(1), bt.StripValueFilter()))

// deleteRows deletes the rows of r in batches: read up to deleteBatch keys,
// delete them, go on after the last.
func (s *Store) deleteRows(ctx, opctx context.Context, tbl *bt.Table, t store.Table, r store.KeyRange) error {
	start := r.Start
	for {
		var keys []string
		err := tbl.ReadRows(opctx, bt.NewRange(string(start), string(r.End)), func(row bt.Row) bool {
			keys = append(keys, row.Key())
			return len(keys) < deleteBatch
		}, keysOnly)
		if err != nil {
			return fail(ctx, opctx, "delete range", t, err)
		}
		if len(keys) == 0 {
			return nil
		}
		entries := make([]*bt.Mutation, len(keys))
		for i := range entries {
			entries[i] = bt.NewMutation()
			entries[i].DeleteRow()
		}
		if err := s.applyBulk(ctx, opctx, tbl, t, "delete range", keys, entries); err != nil {
			return err
		}
		if len(keys) < deleteBatch {
			return nil
		}
		// The next key after the last deleted one.
		start = append([]byte(keys[len(keys)-1]), 0)
	}
}

// checkRanges is store.CheckRanges under this package's name.
func checkRanges(ranges []store.KeyRange) error {
	if err := store.CheckRanges(ranges); err != nil {
		return fmt.Errorf("store/bigtable: %w", err)
	}
	return nil
}
