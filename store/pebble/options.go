package pebble

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"

	pebbledb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configures Open. The zero value is a good default.
type Options struct {
	// CacheSize is the size of the block cache in bytes: uncompressed SSTable
	// blocks shared by every read. Default 128 MiB. Pebble counts memtables
	// against its cache, so the cache made is larger by the filling
	// memtable of each database (MemTableSize and MainMemTableSize) and
	// CacheSize is what blocks get.
	CacheSize int64

	// MemTableSize is the size of one memtable in bytes. Writes go to the
	// WAL and a memtable; a full memtable is flushed to an L0 SSTable. Larger
	// memtables mean fewer, larger L0 files under heavy ingest. Up to four
	// memtables may exist at once (one filling, three flushing) before
	// writes stall. Default 64 MiB.
	MemTableSize uint64

	// MainMemTableSize is the memtable size of the main database (UID,
	// index, meta and rollup tables; the data table has its own database,
	// split.go), at most MemTableSize. The main database logs every write,
	// and a log goes only once its memtable is flushed: with 64 MiB
	// memtables its log held 9.8 MB of rollup and index rows while a
	// backfill of 14.4 M points ran, a quarter of the directory's running
	// peak (issue 17), for 1.6 MB of SSTables once flushed. Default 4 MiB,
	// Pebble's own default.
	MainMemTableSize uint64

	// Compression is the SSTable block compression. Default
	// CompressionFastest (docs/format/store.md has the measurements).
	Compression Compression

	// Logger receives Pebble's log lines and events: background errors,
	// corruption, slow disks and write stalls at warn/error; flushes and
	// compactions at debug. Default slog.Default().
	Logger *slog.Logger

	// FS is the file system Pebble uses. Default the operating system's.
	// Tests inject vfs.NewMem or vfs.NewCrashableMem to simulate crashes.
	FS vfs.FS
}

// Compression names an SSTable block compression.
type Compression uint8

// The compressions. Chunk values are already compact, but keys repeat long
// prefixes and escaped zeros: on data shaped like ours (real chunks) a fast
// LZ codec stores 16% fewer bytes than none for no more CPU, and zstd 3%
// fewer again for about twice the CPU per cold read and 40% more to write.
const (
	// CompressionDefault selects CompressionFastest.
	CompressionDefault Compression = iota
	// CompressionFastest is Pebble's fastest codec for the machine: MinLZ
	// on amd64, Snappy on arm64 (where MinLZ has no assembly).
	CompressionFastest
	// CompressionNone stores blocks as they are.
	CompressionNone
	// CompressionSnappy compresses every block with Snappy.
	CompressionSnappy
	// CompressionMinLZ compresses every block with MinLZ.
	CompressionMinLZ
	// CompressionZstd compresses every block with zstd level 3: the fewest
	// bytes, for the most CPU.
	CompressionZstd
)

func (c Compression) String() string {
	switch c {
	case CompressionDefault:
		return "default"
	case CompressionFastest:
		return "fastest"
	case CompressionNone:
		return "none"
	case CompressionSnappy:
		return "snappy"
	case CompressionMinLZ:
		return "minlz"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

func (c Compression) settings() (pebbledb.DBCompressionSettings, error) {
	switch c {
	case CompressionDefault, CompressionFastest:
		return pebbledb.DBCompressionFastest, nil
	case CompressionNone:
		return pebbledb.DBCompressionNone, nil
	case CompressionSnappy:
		return pebbledb.UniformDBCompressionSettings(sstable.SnappyCompression), nil
	case CompressionMinLZ:
		return pebbledb.UniformDBCompressionSettings(sstable.MinLZCompression), nil
	case CompressionZstd:
		return pebbledb.UniformDBCompressionSettings(sstable.ZstdCompression), nil
	}
	return pebbledb.DBCompressionSettings{}, fmt.Errorf("store/pebble: unknown compression %d", uint8(c))
}

// DefaultOptions returns the default of every setting of Options: what a
// zero field stands for.
func DefaultOptions() Options {
	return Options{CacheSize: 128 << 20, MemTableSize: 64 << 20, MainMemTableSize: 4 << 20, Compression: CompressionFastest}
}

// pebbleOptions translates Options into Pebble's. The choices are explained
// in docs/format/store.md ("Pebble options").
func (o Options) pebbleOptions(logger *slog.Logger) (*pebbledb.Options, error) {
	plog := newPebbleLog(logger)
	cs, err := o.Compression.settings()
	if err != nil {
		return nil, err
	}
	po := &pebbledb.Options{
		// Pin the on-disk format instead of taking Pebble's oldest-supported
		// default: columnar blocks (v5+) compress our long shared key prefixes
		// far better than row blocks, and MinLZ needs v6.
		FormatMajorVersion: pebbledb.FormatValueSeparation,
		MemTableSize:       o.MemTableSize,
		// One memtable filling and up to three flushing before writes stall:
		// room to absorb a burst of big batches while a flush runs.
		MemTableStopWritesThreshold: 4,
		// Retention drops whole key ranges; flush the range tombstone soon
		// so the space comes back without waiting for the memtable to fill.
		FlushDelayDeleteRange: 10 * time.Second,
		// Compactions run one at a time normally and may use more cores
		// when they fall behind.
		CompactionConcurrencyRange: func() (int, int) {
			return 1, max(1, runtime.GOMAXPROCS(0)/2)
		},
		Logger:        plog,
		EventListener: plog.eventListener(),
		FS:            o.FS,
		// Delete obsolete logs instead of keeping them for reuse: Pebble
		// keeps up to MemTableStopWritesThreshold+1 of them, each as large
		// as it grew, and a closed store left 10-119 MB of them (issue 17).
		Cleaner: noRecycleCleaner{},
	}
	if po.MemTableSize == 0 {
		po.MemTableSize = DefaultOptions().MemTableSize
	}
	// The main database's; openData gives the data table's database
	// MemTableSize.
	po.MemTableSize = min(po.MemTableSize, o.mainMemTableSize())
	for i := range po.Levels {
		l := &po.Levels[i]
		// 32 KiB blocks (Pebble's default is 4 KiB): scans read long runs
		// of adjacent cells, bigger blocks compress better and need a
		// tenth of the index entries. A point read (ReadRow) decodes one
		// bigger block, which costs microseconds once it is cached.
		l.BlockSize = 32 << 10
		l.IndexBlockSize = 256 << 10
		// No bloom filters (the default): Pebble consults them only for
		// Get and SeekPrefixGE with a whole-key prefix, and every read we
		// do apart from Increment/PutIfAbsent is a range (a row is a
		// range), so they would cost ~1.2 bytes per cell and block-cache
		// space for nothing. See docs/format/store.md.
		l.FilterPolicy = nil
	}
	po.ApplyCompressionSettings(func() pebbledb.DBCompressionSettings { return cs })
	return po, nil
}

// mainMemTableSize is MainMemTableSize or its default.
func (o Options) mainMemTableSize() uint64 {
	if o.MainMemTableSize == 0 {
		return DefaultOptions().MainMemTableSize
	}
	return o.MainMemTableSize
}

// dataMemTableSize is MemTableSize or its default.
func (o Options) dataMemTableSize() uint64 {
	if o.MemTableSize == 0 {
		return DefaultOptions().MemTableSize
	}
	return o.MemTableSize
}

// The data table's SSTable sizes: 512 KiB in L0, 2 MiB in Lbase, doubling
// below (Pebble's defaults are 2 and 4 MiB). New cells are a new hour of
// every metric, so each flush overlaps every SSTable below it and an
// L0→Lbase compaction rewrites the Lbase files under its L0 files while
// both stay on disk until it ends. A flush's L0 files end where they
// overlap ten times their target size of Lbase: 5 MiB here instead of 20,
// so compactions cover narrower key ranges. While the data table fits in
// one level (up to LBaseMaxBytes, 64 MiB) each compaction's output was up
// to 28 MB and the directory's running peak 1.4× its size after stop; it is
// now under 10 MB (docs/benchmarks.md, "Disk, session 8").
const (
	dataL0FileSize   = 512 << 10
	dataBaseFileSize = 2 << 20
)

// setDataFileSizes sets po's SSTable target sizes to the data table's.
func setDataFileSizes(po *pebbledb.Options) {
	po.TargetFileSizes = [len(po.TargetFileSizes)]int64{dataL0FileSize, dataBaseFileSize}
}

// noRecycleCleaner deletes obsolete files, as Pebble's default cleaner, and
// turns off the recycling of WAL files: Pebble recycles logs only when its
// cleaner does not need the files' contents, which ArchiveCleaner says it
// does (an unexported marker method, promoted from the embedded marker
// below). Clean and String come from DeleteCleaner, embedded shallower.
type noRecycleCleaner struct {
	pebbledb.DeleteCleaner
	needsContents
}

type needsContents struct{ pebbledb.ArchiveCleaner }
