package identity

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Bounds of token verification. A TokenReview is one API server request:
// its answers are cached, each caller may ask for only so many new ones,
// and the verifier's client has a budget of its own (see
// docs/agent.md "Caller identity").
const (
	// DefaultTokenCacheTTL is how long an accepted token's answer is
	// reused; never past the token's own expiry ("exp").
	DefaultTokenCacheTTL = 30 * time.Second
	// DefaultTokenFailureTTL is how long a refused token's answer is
	// reused, so that resending it costs no TokenReview.
	DefaultTokenFailureTTL = 5 * time.Second
	// MaxCachedTokens bounds the cached answers; the least recently used
	// goes first.
	MaxCachedTokens = 1024
	// TokenReviewsPerCallerBurst is how many tokens one caller may have
	// reviewed at once, before TokenReviewsPerCallerRate applies.
	TokenReviewsPerCallerBurst = 5
	// TokenReviewsPerCallerRate is how many further tokens per second one
	// caller may have reviewed; past it its uncached tokens are refused
	// without a TokenReview.
	TokenReviewsPerCallerRate = 1
	// MaxTokenCallers bounds the callers whose review budgets are kept;
	// the least recently used goes first.
	MaxTokenCallers = 1024
	// TokenReviewQPS and TokenReviewBurst are the client-side budget of
	// the verifier's own API server client, shared with nothing else.
	TokenReviewQPS   = 20
	TokenReviewBurst = 40
	// TokenReviewTimeout bounds one TokenReview, waiting for the client's
	// budget included.
	TokenReviewTimeout = 10 * time.Second
	// MaxTokenBytes bounds a token sent to the agent; a longer one is
	// refused without a TokenReview.
	MaxTokenBytes = 16 << 10
)

// Throttled is a token not reviewed because its caller asked for more
// new tokens than its share; the request is refused and may be retried.
type Throttled struct{ Msg string }

func (t *Throttled) Error() string { return t.Msg }

// RefusalRule is RuleServiceAccountToken.
func (t *Throttled) RefusalRule() string { return RuleServiceAccountToken }

// callerKey names the caller whose review budget a token spends: its pod,
// else its user (uid or SID), never its pid, which a caller can change at
// will.
func callerKey(c *Caller) string {
	switch {
	case c.PodUID != "":
		return "pod uid " + c.PodUID
	case c.SID != "":
		return "user SID " + c.SID
	case c.UID >= 0:
		return "user uid " + strconv.FormatInt(c.UID, 10)
	}
	return "the callers of unknown user"
}

// limiters keeps one token bucket per caller key, at most MaxTokenCallers.
type limiters struct {
	clk clock.PassiveClock
	mu  sync.Mutex
	lru *cache.LRUExpireCache
}

func newLimiters(clk clock.PassiveClock) *limiters {
	return &limiters{clk: clk, lru: cache.NewLRUExpireCacheWithClock(MaxTokenCallers, clk)}
}

// idle is how long an unused bucket is kept: long enough to refill, so
// that forgetting it gives its caller nothing.
const idle = time.Duration(TokenReviewsPerCallerBurst/TokenReviewsPerCallerRate+1) * time.Second

// allow spends one review of key's budget; false when none is left.
func (l *limiters) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lim *rate.Limiter
	if v, ok := l.lru.Get(key); ok {
		lim = v.(*rate.Limiter)
	} else {
		lim = rate.NewLimiter(TokenReviewsPerCallerRate, TokenReviewsPerCallerBurst)
	}
	l.lru.Add(key, lim, idle)
	return lim.AllowN(l.clk.Now(), 1)
}

func throttled(key string) *Throttled {
	return &Throttled{Msg: fmt.Sprintf("%s sent more new ServiceAccount tokens than the agent reviews for one caller (%d at once, then %d a second); this token was not reviewed: send the pod's own projected token, which the agent remembers once reviewed, and retry later",
		key, TokenReviewsPerCallerBurst, TokenReviewsPerCallerRate)}
}

// tokenExpiry reads the "exp" claim of a JWT the API server has just
// accepted; false when it has none. It only ever shortens how long the
// answer is reused.
func tokenExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	exp, err := claims.Exp.Float64()
	if err != nil || exp < 0 || exp > 1<<40 {
		return time.Time{}, false
	}
	// A fraction is cut off: the answer ends no later than the token.
	return time.Unix(int64(exp), 0), true
}

// successTTL is how long an accepted token's answer is reused: ttl, cut
// to the token's expiry.
func successTTL(token string, now time.Time, ttl time.Duration) time.Duration {
	if exp, ok := tokenExpiry(token); ok {
		if left := exp.Sub(now); left < ttl {
			return left
		}
	}
	return ttl
}

// TokenReviewConfig is the API server client configuration of a
// TokenVerifier: a copy of rc with a budget of its own (TokenReviewQPS,
// TokenReviewBurst), so that reviews neither wait behind the agent's
// other requests nor delay them.
func TokenReviewConfig(rc *rest.Config) *rest.Config {
	out := rest.CopyConfig(rc)
	out.QPS, out.Burst, out.RateLimiter = TokenReviewQPS, TokenReviewBurst, nil
	return out
}
