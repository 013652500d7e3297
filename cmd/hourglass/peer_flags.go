package main

import (
	"flag"

	"hourglass/internal/app"
)

// peerFlags registers the -peer.* flags: the peer read path between nodes
// sharing Bigtable (package cluster; docs/deploy-bigtable.md).
func peerFlags(fs *flag.FlagSet, c *app.PeerConfig) {
	fs.StringVar(&c.Advertise, "peer.advertise", c.Advertise, "host:port the other nodes call this one at (-storage=bigtable; default: the listener's address, the host name for 0.0.0.0)")
	fs.DurationVar(&c.Heartbeat, "peer.heartbeat", c.Heartbeat, "how often a node writes its registration and reads the others' (-storage=bigtable)")
	fs.DurationVar(&c.Expiry, "peer.expiry", c.Expiry, "a peer without a heartbeat for this long is down: not asked, named in replies' warnings")
	fs.DurationVar(&c.Forget, "peer.forget", c.Forget, "how long a down peer's registration is still named in warnings (a SIGTERM removes it at once)")
	fs.DurationVar(&c.Timeout, "peer.timeout", c.Timeout, "time a query waits for a peer's head before answering without it (with a warning)")
	fs.DurationVar(&c.DeleteTimeout, "peer.delete-timeout", c.DeleteTimeout, "time a delete waits for a peer to confirm before queueing it for that peer (with a warning)")
	fs.IntVar(&c.MaxReplyPoints, "peer.max-reply-points", c.MaxReplyPoints, "points one peer may send for one query (-query-max-points also bounds them)")
	fs.Int64Var(&c.MaxBodyBytes, "peer.max-body-bytes", c.MaxBodyBytes, "bytes of a peer protocol request or reply")
	fs.IntVar(&c.MaxConcurrent, "peer.max-concurrent", c.MaxConcurrent, "snapshot requests of peers this node serves at once; more wait within their -peer.timeout, then 503")
	fs.StringVar(&c.BearerTokenFile, "peer.bearer-token-file", c.BearerTokenFile, "file holding a bearer token with the admin scope, sent to peers when authentication is on")
	fs.StringVar(&c.CAFile, "peer.ca-file", c.CAFile, "PEM roots to verify https peers (default: the system's)")
}
