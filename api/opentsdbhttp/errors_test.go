package opentsdbhttp

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// A query its client canceled is the client's doing: a 4xx (499), never
// "Storage exception" with a 500; a query past its timeout stays 408.
func TestOpenTSDBStatusOfContextErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"canceled", fmt.Errorf("scan: %w", context.Canceled), statusClientClosed},
		{"deadline", fmt.Errorf("scan: %w", context.DeadlineExceeded), http.StatusRequestTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, msg, _ := openTSDBStatus(c.err)
			if code != c.want || code >= 500 {
				t.Errorf("status %d (%q), want %d", code, msg, c.want)
			}
		})
	}
}
