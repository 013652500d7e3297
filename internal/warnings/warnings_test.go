package warnings

import (
	"context"
	"fmt"
	"testing"
)

func TestWarnings(t *testing.T) {
	Add(context.Background(), "dropped") // no gatherer: nothing happens
	if got := From(context.Background()); got != nil {
		t.Fatalf("%q", got)
	}
	ctx, w := With(context.Background())
	Add(ctx, "a")
	Add(ctx, "a")
	Add(ctx, "b")
	if got := w.Messages(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("%q", got)
	}
	for i := range 2 * Max {
		Add(ctx, fmt.Sprint(i))
	}
	if got := From(ctx); len(got) != Max {
		t.Fatalf("%d warnings kept, want the bound %d", len(got), Max)
	}
}
