package api

import "github.com/gorilla/mux"

// promRoutes registers the Prometheus HTTP API (remote write and read, the
// query API). The Prometheus dialect is being built in its own change.
func (s *Server) promRoutes(r *mux.Router) {}
