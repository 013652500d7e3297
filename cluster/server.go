package cluster

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"hourglass/chunk"
	"hourglass/internal/warnings"
)

// The peer protocol's paths (POST, body and reply ContentType). They are
// not in the API's scope table, so with authentication on they need an
// admin credential: -peer.bearer-token-file.
const (
	PathPrefix   = "/api/v1/peer/"
	PathSnapshot = PathPrefix + "snapshot"
	PathDelete   = PathPrefix + "delete"
)

// Handler serves the peer protocol: PathSnapshot answers with this node's
// head's points of the asked series, PathDelete deletes here (head, WAL
// and store) and answers once done. Errors are plain text: 400 for a body
// that does not decode, 413 past a bound.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathSnapshot, n.serveSnapshot)
	mux.HandleFunc("POST "+PathDelete, n.serveDelete)
	return mux
}

// readBody reads a request's body within MaxBodyBytes; false when it
// answered an error.
func (n *Node) readBody(w http.ResponseWriter, r *http.Request, op string) ([]byte, bool) {
	if r.ContentLength > n.opts.MaxBodyBytes {
		n.refuse(w, op, "too_large", http.StatusRequestEntityTooLarge,
			fmt.Sprintf("body of %d bytes, past -peer.max-body-bytes (%d)", r.ContentLength, n.opts.MaxBodyBytes))
		return nil, false
	}
	b, err := readAtMost(r.Body, n.opts.MaxBodyBytes)
	if err != nil {
		n.refuse(w, op, "too_large", http.StatusRequestEntityTooLarge, err.Error())
		return nil, false
	}
	return b, true
}

func (n *Node) refuse(w http.ResponseWriter, op, reason string, code int, msg string) {
	n.m.refused.WithLabelValues(op, reason).Inc()
	http.Error(w, msg, code)
}

func (n *Node) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	select {
	case n.sem <- struct{}{}:
		defer func() { <-n.sem }()
	case <-r.Context().Done():
		n.refuse(w, "snapshot", "busy", http.StatusServiceUnavailable,
			fmt.Sprintf("-peer.max-concurrent (%d) snapshot requests were being served", n.opts.MaxConcurrent))
		return
	}
	b, ok := n.readBody(w, r, "snapshot")
	if !ok {
		return
	}
	req, err := DecodeSnapshotRequest(b)
	if err != nil {
		n.refuse(w, "snapshot", "malformed", http.StatusBadRequest, err.Error())
		return
	}
	limit := uint64(n.opts.MaxReplyPoints)
	if req.MaxPoints > 0 && req.MaxPoints < limit {
		limit = req.MaxPoints
	}
	out := AppendReplyStart(make([]byte, 0, 64+16*len(req.Series)), len(req.Series))
	var pts []chunk.Point
	var total uint64
	for i, l := range req.Series {
		if i%1024 == 1023 && r.Context().Err() != nil {
			return // the caller gave up (its -peer.timeout)
		}
		pts = n.local.Snapshot(l, req.Start, req.End, pts[:0])
		total += uint64(len(pts))
		if total > limit || int64(len(out)) > n.opts.MaxBodyBytes {
			n.refuse(w, "snapshot", "too_large", http.StatusRequestEntityTooLarge,
				fmt.Sprintf("more than %d points (or %d bytes) in this node's head for the request", limit, n.opts.MaxBodyBytes))
			return
		}
		out = AppendReplySeries(out, req.Start, pts)
	}
	n.m.served.WithLabelValues("snapshot").Inc()
	w.Header().Set("Content-Type", ContentType)
	_, _ = w.Write(out)
}

func (n *Node) serveDelete(w http.ResponseWriter, r *http.Request) {
	b, ok := n.readBody(w, r, "delete")
	if !ok {
		return
	}
	req, err := DecodeDeleteRequest(b)
	if err != nil {
		n.refuse(w, "delete", "malformed", http.StatusBadRequest, err.Error())
		return
	}
	if err := n.local.Delete(r.Context(), req.Series, req.Start, req.End); err != nil {
		n.m.refused.WithLabelValues("delete", "failed").Inc()
		http.Error(w, "delete: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	n.m.served.WithLabelValues("delete").Inc()
	w.WriteHeader(http.StatusOK)
}

// Middleware gathers the warnings of each request (other than the peer
// protocol's own) in its context, sends them as WarningHeader headers
// when the reply starts and logs them.
func (n *Node) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, PathPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, ws := warnings.With(r.Context())
		next.ServeHTTP(&warnWriter{ResponseWriter: w, ws: ws}, r.WithContext(ctx))
		if list := ws.Messages(); len(list) > 0 {
			n.log.Warn("answered without some nodes' unsealed points", "path", r.URL.Path, "warnings", list)
		}
	})
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// readAtMost reads r to its end, failing past max bytes.
func readAtMost(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("body past %d bytes (-peer.max-body-bytes)", max)
	}
	return b, nil
}

// trim quotes at most 200 bytes of a reply.
func trim(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
