// Package uid maps metric names, tag keys and tag values to fixed-width
// unique IDs and back, as OpenTSDB's tsdb-uid table does.
//
// Three name spaces (Kind) each have a forward map name→UID, a reverse map
// UID→name and a counter, all in the store's UID table:
//
//	forward  row 'f' | kind | name      qualifier "i"  value UID (width bytes)
//	reverse  row 'r' | kind | UID       qualifier "n"  value name
//	counter  row 'c' | kind             qualifier "n"  value int64, big-endian
//
// Assignment takes the next counter value, writes the reverse map, then puts
// the forward map only if absent; a writer that loses that race (another
// node, another goroutine) adopts the winner's UID and removes its unused
// reverse entry. So every name gets exactly one UID, across goroutines and
// across nodes sharing one store. Both directions are cached in fastcache,
// so the write path reaches the store only for names it has never seen.
package uid

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/VictoriaMetrics/fastcache"

	"hourglass/model"
	"hourglass/rowkey"
	"hourglass/store"
)

// Kind is a UID name space (model.Kind).
type Kind = model.Kind

// The name spaces. Their values are part of the on-disk format.
const (
	Metric = model.KindMetric
	TagK   = model.KindTagK
	TagV   = model.KindTagV
)

// Kinds lists the name spaces.
var Kinds = model.Kinds

// ParseKind accepts OpenTSDB's kind names: metric or metrics, tagk, tagv (any case).
func ParseKind(s string) (Kind, error) { return model.ParseKind(s) }

// The errors of uid, in the class errclass.ErrInvalid (model's).
var (
	// ErrNoSuchName is returned by lookups of a name that has no UID.
	ErrNoSuchName = model.ErrNoSuchName
	// ErrNoSuchUID is returned by lookups of a UID that has no name.
	ErrNoSuchUID = model.ErrNoSuchUID
	// ErrFull is returned when every UID of a name space is assigned.
	ErrFull = model.ErrFull
	// ErrBadKind is returned for an unknown name space.
	ErrBadKind = model.ErrBadKind
	// ErrExists is returned when renaming to a name that already has a UID.
	ErrExists = model.ErrExists
)

// NoSuchNameError names the kind and the name that has no UID (model.NoSuchNameError).
type NoSuchNameError = model.NoSuchNameError

// Options configures a Table.
type Options struct {
	// CacheBytes bounds the in-memory cache of both directions (fastcache
	// allocates it lazily). Default 64 MiB.
	CacheBytes int
}

// DefaultOptions returns the default of every setting of Options: what a
// zero field stands for.
func DefaultOptions() Options { return Options{CacheBytes: 64 << 20} }

// Table is the three UID name spaces of one data set. It is safe for concurrent use.
type Table struct {
	st     store.Store
	widths [3]int
	cache  *fastcache.Cache
	seed   maphash.Seed
	locks  [256]sync.Mutex
}

// New returns the UID table stored in st, with the widths of layout.
func New(st store.Store, layout rowkey.Layout, opts Options) *Table {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultOptions().CacheBytes
	}
	return &Table{
		st:     st,
		widths: [3]int{layout.MetricWidth, layout.TagKWidth, layout.TagVWidth},
		cache:  fastcache.New(opts.CacheBytes),
		seed:   maphash.MakeSeed(),
	}
}

// Width returns the UID width of a kind in bytes.
func (t *Table) Width(k Kind) int { return t.widths[k] }

// DropCaches empties the caches; later lookups read the store.
func (t *Table) DropCaches() { t.cache.Reset() }

func forwardRow(k Kind, name string) []byte {
	b := make([]byte, 0, 2+len(name))
	return append(append(b, 'f', byte(k)), name...)
}

func reverseRow(k Kind, id []byte) []byte {
	b := make([]byte, 0, 2+len(id))
	return append(append(b, 'r', byte(k)), id...)
}

var (
	qualID     = []byte("i")
	qualName   = []byte("n")
	counterQ   = []byte("n")
	cacheFwd   = byte('f')
	cacheRev   = byte('r')
	maxKeyName = 1 << 16
)

func cacheKey(buf []byte, dir byte, k Kind, s []byte) []byte {
	return append(append(buf[:0], dir, byte(k)), s...)
}

// GetID returns the UID of name, or a *NoSuchNameError. It never assigns.
// The UID is appended to dst.
func (t *Table) GetID(ctx context.Context, dst []byte, k Kind, name string) ([]byte, error) {
	var kb [64]byte
	key := cacheKey(kb[:0], cacheFwd, k, []byte(name))
	n := len(dst)
	if len(key) <= maxKeyName {
		if dst = t.cache.Get(dst, key); len(dst) > n {
			return dst, nil
		}
	}
	cells, err := t.st.ReadRow(ctx, store.TableUID, forwardRow(k, name))
	if err != nil {
		return dst, fmt.Errorf("uid: reading %s %q: %w", k, name, err)
	}
	for _, c := range cells {
		if string(c.Qualifier) == string(qualID) {
			t.remember(k, name, c.Value)
			return append(dst, c.Value...), nil
		}
	}
	return dst, &NoSuchNameError{Kind: k, Name: name}
}

// GetName returns the name of a UID.
func (t *Table) GetName(ctx context.Context, k Kind, id []byte) (string, error) {
	var kb [16]byte
	key := cacheKey(kb[:0], cacheRev, k, id)
	var vb [128]byte
	if v := t.cache.Get(vb[:0], key); len(v) > 0 {
		return string(v), nil
	}
	cells, err := t.st.ReadRow(ctx, store.TableUID, reverseRow(k, id))
	if err != nil {
		return "", fmt.Errorf("uid: reading %s %X: %w", k, id, err)
	}
	for _, c := range cells {
		if string(c.Qualifier) == string(qualName) {
			name := string(c.Value)
			t.remember(k, name, id)
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: %s %X", ErrNoSuchUID, k, id)
}

func (t *Table) remember(k Kind, name string, id []byte) {
	if len(name) > maxKeyName || len(name) == 0 {
		return
	}
	var kb [64]byte
	t.cache.Set(cacheKey(kb[:0], cacheFwd, k, []byte(name)), id)
	t.cache.Set(cacheKey(kb[:0], cacheRev, k, id), []byte(name))
}

// GetOrAssign returns the UID of name, assigning the next free one if the
// name has none. The UID is appended to dst.
func (t *Table) GetOrAssign(ctx context.Context, dst []byte, k Kind, name string) ([]byte, error) {
	out, err := t.GetID(ctx, dst, k, name)
	if err == nil || !errors.Is(err, ErrNoSuchName) {
		return out, err
	}
	// One assignment per name at a time within this process, so that
	// goroutines racing on a new name do not burn UIDs; across nodes the
	// put-if-absent below decides.
	mu := &t.locks[maphash.String(t.seed, name)%uint64(len(t.locks))]
	mu.Lock()
	defer mu.Unlock()
	// A goroutine that assigned it meanwhile left it in the cache; the
	// store need not be read again (another node's assignment is found by
	// assign's put-if-absent, and a cache entry evicted since costs one
	// counter value at worst).
	var kb [64]byte
	if key := cacheKey(kb[:0], cacheFwd, k, []byte(name)); len(key) <= maxKeyName {
		if out = t.cache.Get(dst, key); len(out) > len(dst) {
			return out, nil
		}
	}
	return t.assign(ctx, dst, k, name)
}

func (t *Table) assign(ctx context.Context, dst []byte, k Kind, name string) ([]byte, error) {
	width := t.widths[k]
	n, err := t.st.Increment(ctx, store.TableUID, []byte{'c', byte(k)}, counterQ, 1)
	if err != nil {
		return dst, fmt.Errorf("uid: assigning %s %q: %w", k, name, err)
	}
	if n <= 0 || uint64(n) > rowkey.MaxUID(width) {
		return dst, fmt.Errorf("uid: %w for %s on %d bytes (assigning %q)", ErrFull, k, width, name)
	}
	id := rowkey.AppendUID(nil, uint64(n), width)
	// The counter gave this UID to us alone, so the reverse entry is absent;
	// put-if-absent keeps assignment to the two atomic operations, which the
	// store may make durable lazily (see store.Store).
	if _, _, err := t.st.PutIfAbsent(ctx, store.TableUID, reverseRow(k, id), qualName, []byte(name)); err != nil {
		return dst, fmt.Errorf("uid: assigning %s %q: %w", k, name, err)
	}
	written, existing, err := t.st.PutIfAbsent(ctx, store.TableUID, forwardRow(k, name), qualID, id)
	if err != nil {
		return dst, fmt.Errorf("uid: assigning %s %q: %w", k, name, err)
	}
	if !written {
		// Another writer won: drop our reverse entry and take its UID.
		_ = t.st.Write(ctx, store.TableUID, []store.Mutation{{Row: reverseRow(k, id), Qualifier: qualName, Delete: true}})
		id = append([]byte(nil), existing...)
	}
	t.remember(k, name, id)
	return append(dst, id...), nil
}

// Assign assigns a UID to a new name, as /api/uid/assign does: a name that
// already has one is an ErrExists error naming it. Unlike assignment on the
// write path, whose durability rides on the data that uses the UID, the
// UID is durable when Assign returns: the caller is about to tell a client.
func (t *Table) Assign(ctx context.Context, k Kind, name string) ([]byte, error) {
	if id, err := t.GetID(ctx, nil, k, name); err == nil {
		return id, fmt.Errorf("%w with UID: %X", ErrExists, id)
	} else if !errors.Is(err, ErrNoSuchName) {
		return nil, err
	}
	id, err := t.GetOrAssign(ctx, nil, k, name)
	if err != nil {
		return nil, err
	}
	// A Write makes every earlier Increment and PutIfAbsent durable (the
	// store.Store contract); rewriting the reverse entry is that Write.
	if err := t.st.Write(ctx, store.TableUID, []store.Mutation{{Row: reverseRow(k, id), Qualifier: qualName, Value: []byte(name)}}); err != nil {
		return nil, fmt.Errorf("uid: assigning %s %q: %w", k, name, err)
	}
	return id, nil
}

// Suggest returns up to max names of kind k that start with prefix, sorted.
func (t *Table) Suggest(ctx context.Context, k Kind, prefix string, max int) ([]string, error) {
	var out []string
	if max <= 0 {
		return out, nil
	}
	r := store.PrefixRange(forwardRow(k, prefix))
	err := t.st.Scan(ctx, store.TableUID, []store.KeyRange{r}, func(c store.Cell) bool {
		if string(c.Qualifier) != string(qualID) {
			return true
		}
		out = append(out, string(c.Row[2:]))
		return len(out) < max
	})
	return out, err
}

// Rename gives the UID of name the new name newName; the old name no longer resolves.
func (t *Table) Rename(ctx context.Context, k Kind, name, newName string) error {
	id, err := t.GetID(ctx, nil, k, name)
	if err != nil {
		return err
	}
	written, existing, err := t.st.PutIfAbsent(ctx, store.TableUID, forwardRow(k, newName), qualID, id)
	if err != nil {
		return err
	}
	if !written && string(existing) != string(id) {
		return fmt.Errorf("%w with UID: %X", ErrExists, existing)
	}
	err = t.st.Write(ctx, store.TableUID, []store.Mutation{
		{Row: reverseRow(k, id), Qualifier: qualName, Value: []byte(newName)},
	})
	if err != nil {
		return err
	}
	if err := t.st.Write(ctx, store.TableUID, []store.Mutation{{Row: forwardRow(k, name), Qualifier: qualID, Delete: true}}); err != nil {
		return err
	}
	t.cache.Reset()
	return nil
}
