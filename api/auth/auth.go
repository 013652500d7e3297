package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/time/rate"
)

// Options configure an Authenticator.
type Options struct {
	// WebConfigFile is a Prometheus web configuration file (TLS, basic_auth_users).
	WebConfigFile string
	// AuthConfigFile gives scopes to the users of WebConfigFile and lists bearer tokens.
	AuthConfigFile string
	// ReloadInterval is how often the files are checked for a change
	// (their size and modification time). Default 1 s.
	ReloadInterval time.Duration
	Logger         *slog.Logger
	Registerer     prometheus.Registerer
}

// Failure reasons, the values of hourglass_auth_failures_total's label.
const (
	ReasonMissing       = "missing_credentials"
	ReasonBadPassword   = "bad_password"
	ReasonUnknownUser   = "unknown_user"
	ReasonBadToken      = "bad_token"
	ReasonMissingScope  = "missing_scope"
	ReasonTelnetRefused = "telnet_refused"
)

// Authenticator checks credentials against the current configuration.
type Authenticator struct {
	opts      Options
	cur       atomic.Pointer[state]
	stamp     atomic.Value // fileStamp of the files cur was read from
	nextCheck atomic.Int64 // unix nanos of the next look at the files
	reloadMu  sync.Mutex

	cacheMu sync.Mutex
	cache   map[[32]byte]bool
	bcMu    sync.Mutex // one bcrypt comparison at a time: they cost CPU

	failures *prometheus.CounterVec
	reloads  *prometheus.CounterVec
	logLimit *rate.Limiter
}

type fileStamp [2]struct {
	size  int64
	mtime time.Time
}

// maxCache bounds the remembered bcrypt comparisons.
const maxCache = 4096

// New reads and checks both files; an error says which file and what is wrong.
func New(opts Options) (*Authenticator, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ReloadInterval <= 0 {
		opts.ReloadInterval = time.Second
	}
	a := &Authenticator{
		opts:  opts,
		cache: map[[32]byte]bool{},
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_auth_failures_total",
			Help: "Requests and connections refused by authentication or authorisation, by reason."}, []string{"reason"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_auth_config_reloads_total",
			Help: "Re-readings of -web.config.file and -auth.config.file after a change, by result (a failed one keeps the last good configuration)."}, []string{"result"}),
		logLimit: rate.NewLimiter(rate.Every(time.Second), 5),
	}
	stamp := a.stampFiles()
	st, err := load(opts.WebConfigFile, opts.AuthConfigFile)
	if err != nil {
		return nil, err
	}
	a.cur.Store(st)
	a.stamp.Store(stamp)
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(a.failures, a.reloads)
	}
	for _, r := range []string{ReasonMissing, ReasonBadPassword, ReasonUnknownUser, ReasonBadToken, ReasonMissingScope, ReasonTelnetRefused} {
		a.failures.WithLabelValues(r)
	}
	return a, nil
}

func (a *Authenticator) stampFiles() fileStamp {
	var s fileStamp
	for i, p := range []string{a.opts.WebConfigFile, a.opts.AuthConfigFile} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			s[i].size, s[i].mtime = fi.Size(), fi.ModTime()
		} else {
			s[i].size = -1
		}
	}
	return s
}

// current returns the configuration, re-reading the files when they changed
// (looked at once per ReloadInterval at most). A file that no longer loads
// is logged and counted, and the last good configuration stays.
func (a *Authenticator) current() *state {
	now := time.Now().UnixNano()
	if now < a.nextCheck.Load() || (a.opts.WebConfigFile == "" && a.opts.AuthConfigFile == "") {
		return a.cur.Load()
	}
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	if now < a.nextCheck.Load() {
		return a.cur.Load()
	}
	a.nextCheck.Store(now + int64(a.opts.ReloadInterval))
	stamp := a.stampFiles()
	if old, _ := a.stamp.Load().(fileStamp); old == stamp {
		return a.cur.Load()
	}
	st, err := load(a.opts.WebConfigFile, a.opts.AuthConfigFile)
	if err != nil {
		a.reloads.WithLabelValues("failure").Inc()
		a.opts.Logger.Error("auth configuration changed but does not load; keeping the last good one", "err", err)
		// Try again at the next change, not at every request.
		a.stamp.Store(stamp)
		return a.cur.Load()
	}
	a.reloads.WithLabelValues("success").Inc()
	a.opts.Logger.Info("auth configuration re-read", "users", len(st.users), "tokens", len(st.tokens))
	a.stamp.Store(stamp)
	a.cur.Store(st)
	return st
}

// Enabled reports whether credentials are required (some user or token is configured).
func (a *Authenticator) Enabled() bool { return a.current().enabled() }

// TLSConfig returns the TLS configuration of the web configuration file, or
// nil when it configures no TLS. Each handshake uses the configuration as it
// is then (exporter-toolkit's, which reads the certificate files each time).
// Whether TLS is on is decided at start.
func (a *Authenticator) TLSConfig() *tls.Config {
	st := a.cur.Load()
	if st.tls == nil {
		return nil
	}
	return &tls.Config{
		NextProtos: []string{"http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			if st := a.current(); st.tls != nil {
				return st.tls, nil
			}
			// TLS removed from the file: keep serving with the last certificates.
			return a.cur.Load().tls, nil
		},
		// Used only if GetConfigForClient returned nil.
		GetCertificate: st.tls.GetCertificate,
	}
}

// Identity is who made a request and what they may do.
type Identity struct {
	Name   string // the user or token name; "" when authentication is off
	Kind   string // "basic", "bearer" or "none" (authentication off)
	Scopes Scope
}

type ctxKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// Has reports whether the request's identity holds scope s. A context that
// went through no Middleware holds nothing.
func Has(ctx context.Context, s Scope) bool {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return ok && id.Scopes&s == s
}

// all is the identity of every request when authentication is off.
var all = Identity{Kind: "none", Scopes: Read | Write | Admin | Any}

// Authenticate checks the request's credentials: the identity, or the
// failure reason (one of the Reason constants) when there is none.
func (a *Authenticator) Authenticate(r *http.Request) (Identity, string) {
	st := a.current()
	if !st.enabled() {
		return all, ""
	}
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return a.checkToken(st, strings.TrimSpace(h[7:]))
	}
	name, pass, ok := r.BasicAuth()
	if !ok {
		return Identity{}, ReasonMissing
	}
	u, known := st.users[name]
	hash := u.hash
	if !known {
		// Spend the same time on an unknown user as on a known one.
		hash = []byte("$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi")
	}
	if !a.bcryptMatch("basic", name, hash, pass) || !known {
		if !known {
			return Identity{}, ReasonUnknownUser
		}
		return Identity{}, ReasonBadPassword
	}
	return Identity{Name: name, Kind: "basic", Scopes: u.scopes | Any}, ""
}

func (a *Authenticator) checkToken(st *state, secret string) (Identity, string) {
	sum := sha256.Sum256([]byte(secret))
	found := -1
	// Every hashed token is compared, in constant time, whatever matched.
	for i := range st.tokens {
		if t := &st.tokens[i]; t.sha != nil && subtle.ConstantTimeCompare(t.sha, sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		for i := range st.tokens {
			if t := &st.tokens[i]; t.bcrypt != nil && a.bcryptMatch("bearer", t.name, t.bcrypt, secret) {
				found = i
				break
			}
		}
	}
	if found < 0 {
		return Identity{}, ReasonBadToken
	}
	t := st.tokens[found]
	return Identity{Name: t.name, Kind: "bearer", Scopes: t.scopes | Any}, ""
}

// bcryptMatch compares a secret with a bcrypt hash, remembering the answer
// (keyed by a digest of both) since a comparison costs tens of milliseconds.
func (a *Authenticator) bcryptMatch(kind, name string, hash []byte, secret string) bool {
	h := sha256.New()
	for _, p := range [][]byte{[]byte(kind), []byte(name), hash, []byte(secret)} {
		h.Write(p)
		h.Write([]byte{0})
	}
	var key [32]byte
	h.Sum(key[:0])
	a.cacheMu.Lock()
	ok, hit := a.cache[key]
	a.cacheMu.Unlock()
	if hit {
		return ok
	}
	a.bcMu.Lock()
	ok = bcrypt.CompareHashAndPassword(hash, []byte(secret)) == nil
	a.bcMu.Unlock()
	a.cacheMu.Lock()
	if len(a.cache) >= maxCache {
		clear(a.cache)
	}
	a.cache[key] = ok
	a.cacheMu.Unlock()
	return ok
}

// Fail counts a refusal and logs it, at most a few lines a second.
func (a *Authenticator) Fail(reason, remote, what string) {
	a.failures.WithLabelValues(reason).Inc()
	if a.logLimit.Allow() {
		a.opts.Logger.Warn("refused", "reason", reason, "remote", remote, "request", what)
	}
}

// DenyFunc writes a refusal (401 or 403, with msg) in the request's dialect.
type DenyFunc func(w http.ResponseWriter, r *http.Request, code int, msg string)

// Middleware admits a request to next when its credentials hold the scope
// need(r) names: 401 with WWW-Authenticate without valid credentials, 403
// without the scope, written by deny (nil: plain text). The identity rides
// in the request's context (Has). The web configuration's extra headers are
// set on every reply.
func (a *Authenticator) Middleware(need func(*http.Request) Scope, deny DenyFunc, next http.Handler) http.Handler {
	if deny == nil {
		deny = func(w http.ResponseWriter, _ *http.Request, code int, msg string) { http.Error(w, msg, code) }
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := a.current()
		for k, v := range st.headers {
			w.Header().Set(k, v)
		}
		scope := need(r)
		if scope == Open {
			next.ServeHTTP(w, r)
			return
		}
		id, reason := a.Authenticate(r)
		if reason != "" {
			a.Fail(reason, r.RemoteAddr, r.Method+" "+r.URL.Path)
			w.Header().Add("WWW-Authenticate", `Basic realm="hourglass"`)
			w.Header().Add("WWW-Authenticate", `Bearer realm="hourglass"`)
			deny(w, r, http.StatusUnauthorized, "valid credentials needed (HTTP basic auth or a bearer token)")
			return
		}
		if id.Scopes&scope != scope {
			a.Fail(ReasonMissingScope, r.RemoteAddr, r.Method+" "+r.URL.Path+" by "+id.Name)
			deny(w, r, http.StatusForbidden, id.Name+" lacks the "+scope.String()+" scope")
			return
		}
		next.ServeHTTP(w, r.WithContext(WithIdentity(r.Context(), id)))
	})
}
