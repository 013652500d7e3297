package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/api"
	"hourglass/api/opentsdbhttp"
	"hourglass/cluster"
	"hourglass/model"
	"hourglass/series"
	"hourglass/store"
	"hourglass/uid"
)

// PeerConfig configures the peer read path of nodes sharing Bigtable
// (package cluster): the -peer.* flags.
type PeerConfig struct {
	// Advertise is the host:port other nodes call; empty: the listener's
	// address, with the host name for an unspecified IP.
	Advertise       string
	Heartbeat       time.Duration
	Expiry          time.Duration
	Forget          time.Duration
	Timeout         time.Duration
	DeleteTimeout   time.Duration
	MaxReplyPoints  int
	MaxBodyBytes    int64
	MaxConcurrent   int
	BearerTokenFile string // an admin bearer token of the peers' auth configuration
	CAFile          string // roots for https peers; empty: the system's
}

// DefaultPeerConfig returns cluster.DefaultOptions as flags' defaults.
func DefaultPeerConfig() PeerConfig {
	d := cluster.DefaultOptions()
	return PeerConfig{Heartbeat: d.Heartbeat, Expiry: d.Expiry, Forget: d.Forget, Timeout: d.Timeout,
		DeleteTimeout: d.DeleteTimeout, MaxReplyPoints: d.MaxReplyPoints, MaxBodyBytes: d.MaxBodyBytes,
		MaxConcurrent: d.MaxConcurrent}
}

// newNode builds the cluster node of a Bigtable node and applies the
// deletes queued for it while it was away (after the WAL replay, before
// serving).
func newNode(ctx context.Context, cfg Config, st store.Store, db *series.DB, uids *uid.Table, tlsOn bool,
	reg prometheus.Registerer, log *slog.Logger) (*cluster.Node, error) {
	p := cfg.Peer
	opts := cluster.Options{WriterID: cfg.WriterID, Scheme: "http", Heartbeat: p.Heartbeat, Expiry: p.Expiry,
		Forget: p.Forget, Timeout: p.Timeout, DeleteTimeout: p.DeleteTimeout, MaxReplyPoints: p.MaxReplyPoints,
		MaxBodyBytes: p.MaxBodyBytes, MaxConcurrent: p.MaxConcurrent, Logger: log.With("component", "cluster"), Registerer: reg}
	if tlsOn {
		opts.Scheme = "https"
	}
	if p.BearerTokenFile != "" {
		b, err := os.ReadFile(p.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("-peer.bearer-token-file: %w", err)
		}
		opts.BearerToken = strings.TrimSpace(string(b))
	}
	if p.CAFile != "" {
		pem, err := os.ReadFile(p.CAFile)
		if err != nil {
			return nil, fmt.Errorf("-peer.ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-peer.ca-file %s: no PEM certificate in it", p.CAFile)
		}
		opts.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	node := cluster.New(st, db, uids.DropCaches, opts)
	n, err := node.ApplyQueuedDeletes(ctx)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		log.Info("applied deletes other nodes queued for this one", "deletes", n)
	}
	return node, nil
}

// wireNode puts the node into the API: the peer protocol's routes, the
// warnings middleware, deletes that reach every node and UID renames
// that drop every node's caches.
func wireNode(deps *api.Deps, node *cluster.Node) {
	deps.Peer = node.Handler()
	deps.PeerMiddleware = node.Middleware
	deps.OpenTSDB.Deleter = node
	deps.Prom.Deleter = node
	deps.OpenTSDB.UIDs = renamer{UIDs: deps.OpenTSDB.UIDs, node: node}
	deps.OpenTSDB.Meta.SetRecheck(time.Second)
}

// renamer bumps the cluster's cache generation after a rename, so every
// node drops its UID cache within a heartbeat.
type renamer struct {
	opentsdbhttp.UIDs
	node *cluster.Node
}

func (r renamer) Rename(ctx context.Context, k model.Kind, name, newName string) error {
	if err := r.UIDs.Rename(ctx, k, name, newName); err != nil {
		return err
	}
	return r.node.BumpGeneration(ctx)
}

// advertised is the address peers call: -peer.advertise, or the
// listener's, with the host name in place of an unspecified IP.
func advertised(cfg PeerConfig, addr net.Addr) (string, error) {
	if cfg.Advertise != "" {
		return cfg.Advertise, nil
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		h, err := os.Hostname()
		if err != nil {
			return "", errors.New("-peer.advertise is needed: the listener's address has no host and the host name is unknown")
		}
		host = h
	}
	return net.JoinHostPort(host, port), nil
}
