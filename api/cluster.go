package api

import "github.com/gorilla/mux"

// peerPrefix is where the peer protocol of nodes sharing Bigtable lives
// (cluster.PathPrefix): nodes call each other with an admin credential
// (-peer.bearer-token-file).
const peerPrefix = "/api/v1/peer/"

func init() { routeScopes[peerPrefix] = admin }

// clusterRoutes mounts the peer protocol and the warnings middleware when
// the node shares its store with others; on a single node it adds nothing.
func (s *Server) clusterRoutes(r *mux.Router) {
	if s.deps.Peer == nil {
		return
	}
	r.PathPrefix(peerPrefix).Handler(s.deps.Peer)
	if s.deps.PeerMiddleware != nil {
		r.Use(mux.MiddlewareFunc(s.deps.PeerMiddleware))
	}
}
