// Package metricsauth guards a /metrics endpoint as kube-rbac-proxy and
// controller-runtime's filter do, with answers a scraper can act on: the
// bearer token must pass a TokenReview (else 401) and its user a
// SubjectAccessReview for the request's verb and path (else 403); only a
// review that could not be made is 503. Answers on tokens are remembered,
// refusals too, so a flood of one junk token costs one TokenReview.
// pipeguard-webhook and pipeguard-agent serve their metrics through it.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	DefaultCacheSize = 1024
	DefaultAuthnTTL  = time.Minute
	// A refused token stays refused; remembering it briefly makes a flood of
	// the same junk cost one TokenReview.
	DefaultRefusalTTL = 30 * time.Second
	// reviewTimeout bounds each TokenReview and SubjectAccessReview,
	// within the scraper's own timeout (Prometheus: 10 seconds).
	reviewTimeout = 8 * time.Second
)

// Messages of the secure endpoint's refusals, as the scraper reads them.
const (
	msgNoToken = "Unauthorized: no bearer token. Scrape /metrics with the token of a ServiceAccount " +
		"allowed to get /metrics (ClusterRole pipeguard-metrics-reader) in the header \"Authorization: Bearer <token>\""
	msgBadToken = "Unauthorized: the API server did not authenticate the bearer token " +
		"(malformed, expired, revoked, or issued for another cluster or audience). Scrape with a current ServiceAccount token of this cluster"
	msgForbidden = "Forbidden: user %q may not %s %s. Bind it to the ClusterRole pipeguard-metrics-reader " +
		"(config/prometheus), or another role with nonResourceURLs [%s] and verbs [%s]"
	// The cause stays in the component's log: it names the API server,
	// which an unauthenticated caller need not learn.
	msgReviewFailed = "internal error: the API server could not be asked to %s; " +
		"the log of %s has the cause. Retry the scrape"
)

// Options tune a Filter; zero values take the defaults.
type Options struct {
	// Component names the server in WWW-Authenticate's realm and in the
	// 503 answer, e.g. "pipeguard-agent".
	Component string
	// CacheSize bounds the number of tokens whose review is remembered.
	CacheSize int
	// AuthnTTL and RefusalTTL are how long an authenticated or a refused
	// token is remembered.
	AuthnTTL, RefusalTTL time.Duration
	// Clock is the clock of those TTLs; nil means the real one.
	Clock clock.PassiveClock
}

// Filter lets a scrape through when the API server authenticates its
// bearer token (TokenReview) and authorizes its user to get the path
// (SubjectAccessReview). A token it does not authenticate is 401, a user
// it does not authorize 403, and only a review that could not be made 503.
type Filter struct {
	component string
	reviews   authnv1client.TokenReviewInterface
	access    authorizer.Authorizer
	tokens    *tokenCache
	log       logr.Logger
	logs      sampled
}

// New builds the filter on the API server of cfg; it contacts nothing
// until the first scrape.
func New(cfg *rest.Config, log logr.Logger, o Options) (*Filter, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the API server connection for token and access reviews: %w", err)
	}
	authn, err := authnv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("the TokenReview client: %w", err)
	}
	authz, err := authzv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("the SubjectAccessReview client: %w", err)
	}
	// apiserver's delegating authorizer: SubjectAccessReviews with a
	// bounded cache, as kube-apiserver's own webhook authorizer keeps.
	backoff := webhookutil.DefaultRetryBackoffWithInitialDelay(500 * time.Millisecond)
	access, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authz,
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       &backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("the SubjectAccessReview authorizer: %w", err)
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.AuthnTTL <= 0 {
		o.AuthnTTL = DefaultAuthnTTL
	}
	if o.RefusalTTL <= 0 {
		o.RefusalTTL = DefaultRefusalTTL
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Filter{
		component: o.Component,
		reviews:   authn.TokenReviews(),
		access:    access,
		tokens:    newTokenCache(o.CacheSize, o.AuthnTTL, o.RefusalTTL, o.Clock),
		log:       log,
		logs:      sampled{limit: flowcontrol.NewTokenBucketRateLimiter(0.1, 5)},
	}, nil
}

// Wrap puts the filter in front of next.
func (m *Filter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", m.component))
			http.Error(w, msgNoToken, http.StatusUnauthorized)
			return
		}
		a, fresh, err := m.tokens.review(r.Context(), token, m.authenticate)
		if err != nil {
			m.failed(err, "no TokenReview of a scraper's token")
			http.Error(w, fmt.Sprintf(msgReviewFailed, "review the token", m.component), http.StatusServiceUnavailable)
			return
		}
		if a.user == nil {
			if fresh { // a remembered refusal was logged when it was made
				m.refused("token not authenticated", "remote", r.RemoteAddr, "reason", a.reason)
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q, error="invalid_token"`, m.component))
			http.Error(w, msgBadToken, http.StatusUnauthorized)
			return
		}
		attrs := authorizer.AttributesRecord{User: a.user, Verb: strings.ToLower(r.Method), Path: r.URL.Path}
		ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
		defer cancel()
		decision, reason, err := m.access.Authorize(ctx, attrs)
		if err != nil {
			m.failed(err, "no SubjectAccessReview of a scraper", "user", a.user.GetName())
			http.Error(w, fmt.Sprintf(msgReviewFailed, "check the scraper's access", m.component), http.StatusServiceUnavailable)
			return
		}
		if decision != authorizer.DecisionAllow {
			m.refused("access denied", "remote", r.RemoteAddr, "user", a.user.GetName(), "reason", reason)
			http.Error(w, fmt.Sprintf(msgForbidden, a.user.GetName(), attrs.Verb, attrs.Path, attrs.Path, attrs.Verb), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate asks the API server about token. A token it does not
// authenticate is an answer without a user, not an error: errors are for
// reviews that could not be made.
func (m *Filter) authenticate(ctx context.Context, token string) (tokenAnswer, error) {
	tr, err := m.reviews.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("TokenReview: %w", err)
	}
	st := tr.Status
	if !st.Authenticated || st.User.Username == "" {
		return tokenAnswer{reason: st.Error}, nil
	}
	extra := make(map[string][]string, len(st.User.Extra))
	for k, v := range st.User.Extra {
		extra[k] = v
	}
	return tokenAnswer{user: &user.DefaultInfo{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups, Extra: extra}}, nil
}

// refused logs a refusal at V(1), sampled: a flood of junk scrapes must
// not flood the log.
func (m *Filter) refused(msg string, kv ...any) {
	if ok, dropped := m.logs.allow(); ok {
		m.log.V(1).Info("scrape refused: "+msg, append(kv, "linesNotLogged", dropped)...)
	}
}

// failed logs a review that could not be made, sampled like refused.
func (m *Filter) failed(err error, msg string, kv ...any) {
	if ok, dropped := m.logs.allow(); ok {
		m.log.Error(err, msg+"; scrapes fail until the API server answers", append(kv, "linesNotLogged", dropped)...)
	}
}

// bearerToken returns the token of the Authorization header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
}

// sampled passes a few log lines, then about one every 10 seconds, and
// counts those it holds back.
type sampled struct {
	limit   flowcontrol.RateLimiter
	dropped atomic.Int64
}

func (s *sampled) allow() (bool, int64) {
	if !s.limit.TryAccept() {
		s.dropped.Add(1)
		return false, 0
	}
	return true, s.dropped.Swap(0)
}

// tokenAnswer is what the API server said of a token: its user, or nil
// with the API server's reason when it did not authenticate it.
type tokenAnswer struct {
	user   user.Info
	reason string
}

// tokenKey is the SHA-256 of a token: the cache never holds a token.
type tokenKey [sha256.Size]byte

// tokenCache remembers the answers of the last size tokens, each for its
// TTL; the least recently used goes first, so that distinct junk tokens
// cannot grow it. Concurrent reviews of one token are made once.
type tokenCache struct {
	answers              *cache.LRUExpireCache
	authnTTL, refusedTTL time.Duration

	mu       sync.Mutex
	inflight map[tokenKey]*tokenFlight
}

type tokenFlight struct {
	done   chan struct{}
	answer tokenAnswer
	err    error
	// waiters counts the reviews that joined this one, under the cache's
	// mutex.
	waiters int
}

func newTokenCache(size int, authnTTL, refusedTTL time.Duration, clk clock.PassiveClock) *tokenCache {
	return &tokenCache{answers: cache.NewLRUExpireCacheWithClock(size, clk), authnTTL: authnTTL, refusedTTL: refusedTTL, inflight: map[tokenKey]*tokenFlight{}}
}

// review returns the remembered answer on token or asks for one; fresh
// reports an answer asked for now. Errors are not remembered.
func (c *tokenCache) review(ctx context.Context, token string, ask func(context.Context, string) (tokenAnswer, error)) (a tokenAnswer, fresh bool, err error) {
	key := tokenKey(sha256.Sum256([]byte(token)))
	c.mu.Lock()
	if v, ok := c.answers.Get(key); ok {
		c.mu.Unlock()
		return v.(tokenAnswer), false, nil
	}
	f, joined := c.inflight[key]
	if joined {
		f.waiters++
	} else {
		f = &tokenFlight{done: make(chan struct{})}
		c.inflight[key] = f
	}
	c.mu.Unlock()
	if joined {
		select {
		case <-f.done:
			return f.answer, false, f.err
		case <-ctx.Done():
			return tokenAnswer{}, false, ctx.Err()
		}
	}

	// Others wait on this review: it outlives this scraper's cancellation.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
	defer cancel()
	f.answer, f.err = ask(rctx, token)
	c.mu.Lock()
	if f.err == nil {
		ttl := c.authnTTL
		if f.answer.user == nil {
			ttl = c.refusedTTL
		}
		c.answers.Add(key, f.answer, ttl)
	}
	delete(c.inflight, key)
	c.mu.Unlock()
	close(f.done)
	return f.answer, true, f.err
}

// len is the number of answers held that have not expired.
func (c *tokenCache) len() int {
	return len(c.answers.Keys())
}

// Remembered is the number of tokens whose answer the filter holds.
func (m *Filter) Remembered() int { return m.tokens.len() }
