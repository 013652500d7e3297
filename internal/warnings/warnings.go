// Package warnings gathers what a request could not see — peers that did
// not answer (package cluster) — in its context, for the reply: the
// handlers of both dialects read them without knowing where they came
// from. It imports nothing of hourglass.
package warnings

import (
	"context"
	"sync"
)

// List gathers a request's warnings. It is safe for concurrent use.
type List struct {
	mu   sync.Mutex
	msgs []string
}

// Max bounds the warnings one request keeps.
const Max = 16

type key struct{}

// With returns a context that gathers warnings, and the gatherer.
func With(ctx context.Context) (context.Context, *List) {
	w := &List{}
	return context.WithValue(ctx, key{}, w), w
}

// Add adds msg to the warnings of ctx (once; nothing if ctx gathers none).
func Add(ctx context.Context, msg string) {
	w, _ := ctx.Value(key{}).(*List)
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if m == msg {
			return
		}
	}
	if len(w.msgs) < Max {
		w.msgs = append(w.msgs, msg)
	}
}

// Messages returns the warnings gathered so far.
func (w *List) Messages() []string {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// From returns the warnings gathered in ctx so far.
func From(ctx context.Context) []string {
	w, _ := ctx.Value(key{}).(*List)
	return w.Messages()
}
