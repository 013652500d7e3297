package cluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"hourglass/model"
	"hourglass/store"
)

// headCounter is a Local that can count its head's points (series.DB).
type headCounter interface{ Stats() model.Stats }

// headMinner is a Local that can tell the oldest hour its head holds
// (series.DB).
type headMinner interface{ HeadMinTime() (int64, bool) }

// Rows of the meta table (no other prefix of the table starts with "peer/"):
//
//	"peer/n/" | writer[2, BE]                 a node's registration: qualifier "j", JSON (registration)
//	"peer/g"                                  the cache generation: qualifier "n", int64 BE (Increment)
//	"peer/d/" | writer[2, BE] | seq[8, BE]    a delete the node missed: qualifier "j", a delete request
var (
	prefixNode    = []byte("peer/n/")
	rowGeneration = []byte("peer/g")
	prefixDelete  = []byte("peer/d/")
	qualJSON      = []byte("j")
	qualGen       = []byte("n")
)

// registration is what a node writes about itself every heartbeat.
type registration struct {
	Writer    uint16 `json:"writer"`
	Addr      string `json:"addr"`   // host:port other nodes call
	Scheme    string `json:"scheme"` // http or https
	Heartbeat int64  `json:"heartbeat"`
	Started   int64  `json:"started"`
	// HeadPoints is how many points the node's head held (not yet in
	// Bigtable) at HeadAt, counted every headEvery heartbeats: what the
	// others cannot see when it is gone.
	HeadPoints int64 `json:"head_points"`
	HeadAt     int64 `json:"head_at"`
	// HeadMin (unix ms) is older than every point the head held at
	// Heartbeat, and than the hour before it (headMin): a query whose range
	// ends before it does not ask this node. 0 (a node that does not say):
	// always ask.
	HeadMin int64 `json:"head_min,omitempty"`
}

// headEvery is how many heartbeats pass between two counts of the head's
// points (a count visits every series).
const headEvery = 10

// Peer is another node as the last registry read saw it.
type Peer struct {
	Writer uint16
	URL    string // scheme://addr
	// Heartbeat is the peer's last heartbeat (its clock, unix ms); seen is
	// when this node last saw it change (this node's clock).
	Heartbeat int64
	// HeadPoints were in its head at HeadAt (unix ms); no point in its head
	// was older than HeadMin at Heartbeat: see registration.
	HeadPoints, HeadAt, HeadMin int64
	seen                        time.Time
}

func nodeRow(w uint16) []byte {
	return binary.BigEndian.AppendUint16(append([]byte(nil), prefixNode...), w)
}

func deletePrefix(w uint16) []byte {
	return binary.BigEndian.AppendUint16(append([]byte(nil), prefixDelete...), w)
}

// heartbeat writes this node's registration.
func (n *Node) heartbeat(ctx context.Context) error {
	now := n.opts.Now().UnixMilli()
	if c, ok := n.local.(headCounter); ok && n.beats%headEvery == 0 {
		n.headPoints, n.headAt = int64(c.Stats().PointsInHead), now
	}
	n.beats++
	reg := registration{Writer: n.opts.WriterID, Addr: n.addr, Scheme: n.opts.Scheme,
		Heartbeat: now, Started: n.started.UnixMilli(), HeadPoints: n.headPoints, HeadAt: n.headAt,
		HeadMin: n.headMin(now)}
	v, err := json.Marshal(reg)
	if err != nil {
		return err
	}
	return n.st.Write(ctx, store.TableMeta, []store.Mutation{{Row: nodeRow(n.opts.WriterID), Qualifier: qualJSON, Value: v}})
}

// headMin is the registration's HeadMin at now (unix ms): the hour of the
// oldest chunk in the head, and at most the start of the hour before now,
// so that the points of the hours still open (within the seal grace) that
// arrive before the next heartbeat are always asked for. Only a late point
// (an hour past its grace, older than the head held) can then go unasked
// until this node's next heartbeat has been read: two heartbeats at most.
// 0 when the local engine cannot tell.
func (n *Node) headMin(now int64) int64 {
	hm, ok := n.local.(headMinner)
	if !ok {
		return 0
	}
	const hourMs = int64(time.Hour / time.Millisecond)
	bound := now - now%hourMs - hourMs
	if t, ok := hm.HeadMinTime(); ok {
		bound = min(bound, t)
	}
	return max(bound, 1) // 0 says "unknown"
}

// readRegistry reads every registration and the generation in one Scan and
// updates the view of the peers; a changed generation drops the caches.
func (n *Node) readRegistry(ctx context.Context) error {
	var regs []registration
	var gen int64
	ranges := []store.KeyRange{store.PrefixRange(prefixNode), store.RowRange(rowGeneration)}
	sort.Slice(ranges, func(i, j int) bool { return string(ranges[i].Start) < string(ranges[j].Start) })
	err := n.st.Scan(ctx, store.TableMeta, ranges, func(c store.Cell) bool {
		switch {
		case string(c.Row) == string(rowGeneration) && string(c.Qualifier) == string(qualGen) && len(c.Value) == 8:
			gen = int64(binary.BigEndian.Uint64(c.Value))
		case string(c.Qualifier) == string(qualJSON):
			var r registration
			if json.Unmarshal(c.Value, &r) == nil && r.Addr != "" {
				regs = append(regs, r)
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	now := n.opts.Now()
	n.mu.Lock()
	old := map[uint16]Peer{}
	for _, p := range n.peers {
		old[p.Writer] = p
	}
	n.peers = n.peers[:0]
	for _, r := range regs {
		if r.Writer == n.opts.WriterID {
			continue
		}
		p := Peer{Writer: r.Writer, URL: r.Scheme + "://" + r.Addr, Heartbeat: r.Heartbeat,
			HeadPoints: r.HeadPoints, HeadAt: r.HeadAt, HeadMin: r.HeadMin}
		switch o, ok := old[r.Writer]; {
		case ok && o.Heartbeat == r.Heartbeat:
			p.seen = o.seen // no beat since: its age grows on this node's clock
		case ok:
			p.seen = now
		default:
			// First sight: trust its clock for how old the beat is.
			p.seen = now.Add(-time.Duration(max(0, n.opts.Now().UnixMilli()-r.Heartbeat)) * time.Millisecond)
		}
		n.peers = append(n.peers, p)
	}
	changed := n.genRead && gen != n.gen
	n.gen, n.genRead = gen, true
	n.mu.Unlock()
	if changed && n.invalidate != nil {
		n.invalidate()
		n.m.invalidations.Inc()
	}
	return nil
}

// BumpGeneration tells every node to drop its name caches (a UID rename):
// each does within one heartbeat.
func (n *Node) BumpGeneration(ctx context.Context) error {
	_, err := n.st.Increment(ctx, store.TableMeta, rowGeneration, qualGen, 1)
	return err
}

// deregister removes this node's registration (a clean stop: its head is
// in the store, no one needs to ask it).
func (n *Node) deregister(ctx context.Context) error {
	return n.st.Write(ctx, store.TableMeta, []store.Mutation{{Row: nodeRow(n.opts.WriterID), Qualifier: qualJSON, Delete: true}})
}

// queueDelete records a delete for writer w, which did not confirm it: w
// applies it when it next starts (ApplyQueuedDeletes).
func (n *Node) queueDelete(ctx context.Context, w uint16, body []byte) error {
	n.mu.Lock()
	seq := max(n.opts.Now().UnixMicro(), n.lastSeq+1)
	n.lastSeq = seq
	n.mu.Unlock()
	row := binary.BigEndian.AppendUint64(deletePrefix(w), uint64(seq))
	return n.st.Write(ctx, store.TableMeta, []store.Mutation{{Row: row, Qualifier: qualJSON, Value: body}})
}

// ApplyQueuedDeletes applies the deletes other nodes queued for this one
// while it was unreachable, in order, and removes them. Call it after the
// WAL has replayed and before serving.
func (n *Node) ApplyQueuedDeletes(ctx context.Context) (int, error) {
	type queued struct {
		row  []byte
		body []byte
	}
	var qs []queued
	err := n.st.Scan(ctx, store.TableMeta, []store.KeyRange{store.PrefixRange(deletePrefix(n.opts.WriterID))}, func(c store.Cell) bool {
		qs = append(qs, queued{row: append([]byte(nil), c.Row...), body: append([]byte(nil), c.Value...)})
		return true
	})
	if err != nil {
		return 0, err
	}
	for _, q := range qs {
		r, derr := DecodeDeleteRequest(q.body)
		if derr != nil {
			n.log.Warn("a queued delete does not decode; dropped", "row", fmt.Sprintf("%x", q.row), "err", derr)
		} else if err := n.local.Delete(ctx, r.Series, r.Start, r.End); err != nil {
			return 0, fmt.Errorf("cluster: applying a delete queued for this node: %w", err)
		}
		if err := n.st.Write(ctx, store.TableMeta, []store.Mutation{{Row: q.row, Qualifier: qualJSON, Delete: true}}); err != nil {
			return 0, err
		}
	}
	return len(qs), nil
}
