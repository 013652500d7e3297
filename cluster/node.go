package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/chunk"
	"hourglass/internal/warnings"
	"hourglass/query"
	"hourglass/series"
	"hourglass/store"
)

// Local is this node's engine, as the cluster uses it (series.DB).
type Local interface {
	Snapshot(l series.Labels, start, end int64, dst []chunk.Point) []chunk.Point
	Delete(ctx context.Context, ls []series.Labels, start, end int64) error
}

// Options configures a Node. Zero fields take DefaultOptions' values.
type Options struct {
	WriterID uint16
	// Scheme is how peers call this node: "http" or "https".
	Scheme string
	// Heartbeat is how often the node writes its registration and reads
	// everyone's; Expiry is how long a peer may go without a heartbeat
	// before it counts as down (not asked; named in warnings).
	Heartbeat, Expiry time.Duration
	// Forget is how long a down peer's registration is still named in
	// warnings: a node stopped with SIGTERM removes its own; one that
	// crashed and never came back is forgotten after this.
	Forget time.Duration
	// Timeout bounds each call to a peer for a query; DeleteTimeout for a delete.
	Timeout, DeleteTimeout time.Duration
	// MaxReplyPoints bounds the points one peer may send for one query
	// (the querying node's own -query-max-points also applies to the
	// whole); MaxBodyBytes bounds a peer request's or reply's body.
	MaxReplyPoints int
	MaxBodyBytes   int64
	// MaxConcurrent bounds the snapshot requests this node serves at once;
	// more wait, as long as their caller's timeout lets them.
	MaxConcurrent int
	// BearerToken authenticates this node to its peers (an admin token of
	// their auth configuration); empty sends none.
	BearerToken string
	// TLS is the client configuration for https peers (nil: the system's roots).
	TLS        *tls.Config
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// DefaultOptions returns the defaults of Options.
func DefaultOptions() Options {
	return Options{Scheme: "http", Heartbeat: time.Second, Expiry: 5 * time.Second, Forget: 24 * time.Hour,
		Timeout: 2 * time.Second, DeleteTimeout: 30 * time.Second, MaxReplyPoints: 5_000_000, MaxBodyBytes: 256 << 20,
		MaxConcurrent: 8}
}

func (o *Options) fill() {
	d := DefaultOptions()
	if o.Scheme == "" {
		o.Scheme = d.Scheme
	}
	for _, p := range []struct{ v, d *time.Duration }{{&o.Heartbeat, &d.Heartbeat}, {&o.Expiry, &d.Expiry},
		{&o.Forget, &d.Forget}, {&o.Timeout, &d.Timeout}, {&o.DeleteTimeout, &d.DeleteTimeout}} {
		if *p.v <= 0 {
			*p.v = *p.d
		}
	}
	if o.MaxReplyPoints <= 0 {
		o.MaxReplyPoints = d.MaxReplyPoints
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = d.MaxConcurrent
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Node is this node's part of the cluster: its registration, its view of
// the peers, the fan-out of reads and deletes, and the peer protocol's
// handlers. Build it with New; it is safe for concurrent use.
type Node struct {
	opts       Options
	st         store.Store
	local      Local
	invalidate func() // drops the name caches
	log        *slog.Logger
	m          *metrics
	client     *http.Client
	started    time.Time
	addr       string

	mu      sync.Mutex
	peers   []Peer
	gen     int64
	genRead bool
	lastSeq int64

	// beats, headPoints and headAt belong to the heartbeat (Start, loop).
	beats              int
	headPoints, headAt int64

	sem  chan struct{} // snapshot requests being served
	stop chan struct{}
	done chan struct{}
}

// New returns a node over st and the local engine; invalidate (may be nil)
// drops the node's name caches when another node renamed a UID.
func New(st store.Store, local Local, invalidate func(), opts Options) *Node {
	opts.fill()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = opts.TLS
	tr.MaxIdleConnsPerHost = 16
	n := &Node{opts: opts, st: st, local: local, invalidate: invalidate, log: opts.Logger,
		client: &http.Client{Transport: tr}, started: opts.Now(), sem: make(chan struct{}, opts.MaxConcurrent),
		stop: make(chan struct{}), done: make(chan struct{})}
	n.m = newMetrics(opts.Registerer, n)
	return n
}

// Start registers the node under addr (host:port its peers call), reads
// the registry once and keeps both up to date every heartbeat until Close.
func (n *Node) Start(ctx context.Context, addr string) error {
	n.addr = addr
	if err := n.heartbeat(ctx); err != nil {
		return fmt.Errorf("cluster: registering: %w", err)
	}
	if err := n.readRegistry(ctx); err != nil {
		return fmt.Errorf("cluster: reading the registry: %w", err)
	}
	go n.loop()
	return nil
}

func (n *Node) loop() {
	defer close(n.done)
	t := time.NewTicker(n.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.opts.Expiry)
		err := n.heartbeat(ctx)
		if err == nil {
			err = n.readRegistry(ctx)
		}
		cancel()
		if err != nil {
			n.m.heartbeatErrors.Inc()
			n.log.Warn("cluster heartbeat failed", "err", err)
		}
	}
}

// Close stops the heartbeat and removes the registration: call it once the
// head is in the store (a clean stop), or not at all after a failed one.
func (n *Node) Close(ctx context.Context, deregister bool) error {
	select {
	case <-n.stop:
		return nil
	default:
	}
	close(n.stop)
	if n.addr != "" {
		<-n.done
	}
	if deregister && n.addr != "" {
		return n.deregister(ctx)
	}
	return nil
}

// view returns the live peers and the down ones still to be named.
func (n *Node) view() (live, down []Peer) {
	now := n.opts.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.peers {
		switch age := now.Sub(p.seen); {
		case age < n.opts.Expiry:
			live = append(live, p)
		case age < n.opts.Forget:
			down = append(down, p)
		}
	}
	return live, down
}

// Peers returns the peers as the last registry read saw them: live ones
// first.
func (n *Node) Peers() (live, down []Peer) { return n.view() }

// unseen says what a reply without peer p's head misses.
func unseen(p Peer) string {
	s := "the points it acknowledged and has not written to Bigtable yet are missing (at most its last hour and the seal grace"
	if p.HeadAt > 0 {
		s += fmt.Sprintf("; %d points at %s", p.HeadPoints, time.UnixMilli(p.HeadAt).UTC().Format(time.RFC3339))
	}
	return s + ")"
}

func downWarning(p Peer) string {
	return fmt.Sprintf("node %d (%s) has sent no heartbeat since %s: %s",
		p.Writer, p.URL, time.UnixMilli(p.Heartbeat).UTC().Format(time.RFC3339), unseen(p))
}

func failWarning(p Peer, err error) string {
	return fmt.Sprintf("node %d (%s) did not answer (%v): %s", p.Writer, p.URL, err, unseen(p))
}

// call posts body to a peer's path and returns the reply's body, at most
// MaxBodyBytes of it.
func (n *Node) call(ctx context.Context, p Peer, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+path, bytesReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", ContentType)
	if n.opts.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+n.opts.BearerToken)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := readAtMost(resp.Body, n.opts.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusRequestEntityTooLarge {
		return nil, fmt.Errorf("%w: %s", errTooMany, trim(b))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, trim(b))
	}
	return b, nil
}

// callAll posts body to path on every peer of live at once, each call
// bounded by timeout, and calls reply with the peer's index in live and
// its answer, on the call's goroutine. It returns at once; wait returns
// once every reply has been handled.
func (n *Node) callAll(ctx context.Context, live []Peer, timeout time.Duration, path string, body []byte,
	reply func(i int, b []byte, err error)) (wait func()) {
	var wg sync.WaitGroup
	for i, p := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			b, err := n.call(cctx, p, path, body)
			reply(i, b, err)
		}()
	}
	return wg.Wait
}

// Snapshots returns, for each series of ls, the points in [start, end] that
// this node's head and every live peer's head hold, merged (sorted, one per
// timestamp). Peers that do not answer within the timeout, and down ones,
// are named in ctx's warnings. maxPoints (0: none) bounds what each peer
// may send; past it the error is a *LimitError.
func (n *Node) Snapshots(ctx context.Context, ls []series.Labels, start, end int64, maxPoints int) ([][]chunk.Point, error) {
	out := make([][]chunk.Point, len(ls))
	for i, l := range ls {
		out[i] = n.local.Snapshot(l, start, end, nil)
	}
	live, down := n.view()
	for _, p := range down {
		warnings.Add(ctx, downWarning(p))
		n.m.warnings.Inc()
	}
	live = n.holding(live, end)
	if len(live) == 0 || len(ls) == 0 {
		return out, nil
	}
	limit := n.opts.MaxReplyPoints
	if maxPoints > 0 && maxPoints < limit {
		limit = maxPoints
	}
	body := AppendSnapshotRequest(nil, &SnapshotRequest{Start: start, End: end, MaxPoints: uint64(limit), Series: ls})
	began := time.Now()
	replies := make([][][]chunk.Point, len(live))
	errs := make([]error, len(live))
	n.callAll(ctx, live, n.opts.Timeout, PathSnapshot, body, func(i int, b []byte, err error) {
		if err == nil {
			replies[i], err = DecodeReply(b, len(ls), start, uint64(limit))
		}
		errs[i] = err
	})()
	n.m.fanout.Observe(time.Since(began).Seconds())
	for i, p := range live {
		err := errs[i]
		switch {
		case err == nil:
			n.m.calls.WithLabelValues("snapshot", "ok").Inc()
		case errors.Is(err, errTooMany):
			n.m.calls.WithLabelValues("snapshot", "too_large").Inc()
			return nil, &query.LimitError{What: "points", Limit: limit, Flag: "-peer.max-reply-points",
				Why: "points a peer (" + p.URL + ") holds in its head for this query"}
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			n.m.calls.WithLabelValues("snapshot", "error").Inc()
			n.m.warnings.Inc()
			warnings.Add(ctx, failWarning(p, err))
		}
	}
	for i := range ls {
		merged := out[i]
		extra := false
		for _, r := range replies {
			if r != nil && len(r[i]) > 0 {
				merged = append(merged, r[i]...)
				extra = true
			}
		}
		if extra && len(out[i]) > 0 || extra && len(live) > 1 {
			merged = series.SortDedup(merged)
		}
		out[i] = merged
	}
	return out, nil
}

// holding returns the peers of live whose heads may hold points at or
// before end: a peer whose registration's HeadMin is after end had none
// that old at its last heartbeat (registry.go's headMin says how late a
// point can still be missed), and is not asked; each one skipped is
// counted. It filters live in place.
func (n *Node) holding(live []Peer, end int64) []Peer {
	ask := live[:0]
	for _, p := range live {
		if p.HeadMin > 0 && end < p.HeadMin {
			n.m.calls.WithLabelValues("snapshot", "skipped").Inc()
			continue
		}
		ask = append(ask, p)
	}
	return ask
}

// Delete deletes the points of ls in [start, end] here and on every live
// peer, in parallel, and returns once all have (each peer's head and the
// store). A peer that does not confirm — down, or failing — gets the
// delete queued in the store, to apply when it starts, and is named in
// ctx's warnings.
func (n *Node) Delete(ctx context.Context, ls []series.Labels, start, end int64) error {
	body := AppendDeleteRequest(nil, &DeleteRequest{Start: start, End: end, Series: ls})
	live, down := n.view()
	errs := make([]error, len(live))
	wait := n.callAll(ctx, live, n.opts.DeleteTimeout, PathDelete, body, func(i int, _ []byte, err error) { errs[i] = err })
	lerr := n.local.Delete(ctx, ls, start, end)
	wait()
	missed := down
	for i, p := range live {
		if errs[i] != nil {
			n.m.calls.WithLabelValues("delete", "error").Inc()
			missed = append(missed, p)
			warnings.Add(ctx, fmt.Sprintf("node %d (%s) did not confirm the delete (%v): it is queued for it", p.Writer, p.URL, errs[i]))
			continue
		}
		n.m.calls.WithLabelValues("delete", "ok").Inc()
	}
	for _, p := range down {
		warnings.Add(ctx, fmt.Sprintf("node %d (%s) is down: the delete is queued for it to apply when it starts", p.Writer, p.URL))
	}
	for _, p := range missed {
		if err := n.queueDelete(ctx, p.Writer, body); err != nil {
			return fmt.Errorf("cluster: queueing a delete for node %d: %w", p.Writer, err)
		}
		n.m.queuedDeletes.Inc()
	}
	return lerr
}

// Snapshot is this node's head alone (query.Head); queries use Snapshots.
func (n *Node) Snapshot(l series.Labels, start, end int64, dst []chunk.Point) []chunk.Point {
	return n.local.Snapshot(l, start, end, dst)
}
