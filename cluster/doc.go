// Package cluster makes the nodes that share one Bigtable answer with each
// other's unsealed points: every node registers itself (address and
// heartbeat) in the store's meta table, reads the others' registrations
// every heartbeat, and a query asks the live peers, in parallel and within
// a bounded time, for their heads' points of the series it reads (the
// peer read path). Deletes reach every live peer's head before the reply;
// a peer that cannot be reached is named in the reply as a warning, and a
// delete it missed is queued in the store for it to apply when it starts.
// UID renames bump a generation counter beside the registrations, so every
// node drops its UID cache within one heartbeat.
//
// One node on Pebble runs none of it: internal/app builds a Node only with
// -storage=bigtable. docs/design.md ("Fresh reads across nodes") has the
// cost model and why this path was chosen over writing open chunks to
// Bigtable as they grow.
package cluster
