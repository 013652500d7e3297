package migrate

import (
	"context"
	"fmt"
	"sync"
)

// Run is one migration: the slices to copy and what copies them.
type Run struct {
	Source      Source
	NewSink     func() Sink // one per worker
	Slices      []Slice
	State       *State    // completed slices, skipped and recorded
	Limiter     *Limiter  // nil: no limit
	Progress    *Progress // nil: not counted
	Concurrency int       // slices copied at once (at least 1)
	MaxSlices   int       // stop after this many slices (0: all)
}

// Todo lists the slices of r that are not completed yet, at most MaxSlices.
func (r *Run) Todo() []Slice {
	var todo []Slice
	for _, s := range r.Slices {
		if r.State != nil && r.State.Done(s.Start) {
			continue
		}
		if r.MaxSlices > 0 && len(todo) == r.MaxSlices {
			break
		}
		todo = append(todo, s)
	}
	return todo
}

// Copy copies the slices of todo, Concurrency at a time, each once its
// last batch is acknowledged recorded in State. It stops at the first
// error, which names the slice.
func (r *Run) Copy(ctx context.Context, todo []Slice) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan Slice)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for range max(r.Concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sink := r.NewSink()
			for s := range work {
				if err := r.copySlice(ctx, s, sink); err != nil {
					fail(fmt.Errorf("slice %s: %w", s, err))
					return
				}
			}
		}()
	}
feed:
	for _, s := range todo {
		select {
		case work <- s:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

func (r *Run) copySlice(ctx context.Context, s Slice, sink Sink) error {
	err := r.Source.Read(ctx, s, func(ser *Series) error {
		if r.Progress != nil && ser.Skipped > 0 {
			r.Progress.AddSkipped(ser.Skipped)
		}
		if len(ser.Points) == 0 {
			return nil
		}
		if err := r.Limiter.Wait(ctx, len(ser.Points)); err != nil {
			return err
		}
		if err := sink.Write(ctx, ser); err != nil {
			return err
		}
		if r.Progress != nil {
			r.Progress.AddPoints(len(ser.Points))
		}
		return nil
	})
	if err == nil {
		err = sink.Flush(ctx)
	}
	if err != nil {
		return err
	}
	if r.State != nil {
		if err := r.State.MarkDone(s.Start); err != nil {
			return err
		}
	}
	if r.Progress != nil {
		r.Progress.SliceDone(s)
	}
	return nil
}

// Diff is the point count of one slice on both sides.
type Diff struct {
	Slice    Slice
	Src, Dst int64
}

// Verify counts the points of each slice in src and dst, Concurrency
// slices at a time, and returns the slices whose counts differ, in order,
// and the total counted on the source side.
func Verify(ctx context.Context, src, dst Source, slices []Slice, concurrency int) ([]Diff, int64, error) {
	diffs := make([]Diff, len(slices))
	work := make(chan int)
	errs := make(chan error, max(concurrency, 1))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range max(concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				d := Diff{Slice: slices[i]}
				var err error
				if d.Src, err = count(ctx, src, d.Slice); err == nil {
					d.Dst, err = count(ctx, dst, d.Slice)
				}
				if err != nil {
					errs <- fmt.Errorf("verifying slice %s: %w", d.Slice, err)
					cancel()
					return
				}
				diffs[i] = d
			}
		}()
	}
feed:
	for i := range slices {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, 0, err
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	var out []Diff
	var total int64
	for _, d := range diffs {
		total += d.Src
		if d.Src != d.Dst {
			out = append(out, d)
		}
	}
	return out, total, nil
}

func count(ctx context.Context, src Source, s Slice) (int64, error) {
	var n int64
	err := src.Read(ctx, s, func(ser *Series) error {
		n += int64(len(ser.Points))
		return nil
	})
	return n, err
}
