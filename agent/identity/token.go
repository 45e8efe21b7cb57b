package identity

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	"github.com/pipeguard/pipeguard/internal/option"
)

// Extra keys the API server sets on bound ServiceAccount tokens.
const (
	extraPodName  = "authentication.kubernetes.io/pod-name"
	extraPodUID   = "authentication.kubernetes.io/pod-uid"
	extraNodeName = "authentication.kubernetes.io/node-name"
)

// TokenReviewer creates TokenReviews; client-go's
// AuthenticationV1().TokenReviews() is the real one.
type TokenReviewer interface {
	Create(ctx context.Context, tr *authnv1.TokenReview, opts metav1.CreateOptions) (*authnv1.TokenReview, error)
}

// TokenOptions configures a TokenVerifier.
type TokenOptions struct {
	// Reviewer sends TokenReviews to the API server.
	Reviewer TokenReviewer
	// Audience is the audience tokens must be issued for.
	Audience string
	// NodeName is this node; a token bound to another node is refused.
	NodeName string
	// CacheTTL bounds how long an accepted token's answer is reused; 0
	// means DefaultTokenCacheTTL.
	CacheTTL time.Duration
	// FailureTTL is how long a refused token's answer is reused; 0 means
	// DefaultTokenFailureTTL.
	FailureTTL time.Duration
	// Clock is the clock; nil means the real one.
	Clock clock.PassiveClock
}

// TokenVerifier verifies projected ServiceAccount tokens with TokenReview
// and checks them against the caller's peer identity.
type TokenVerifier struct {
	o TokenOptions
	// cache holds the answers of the last MaxCachedTokens tokens, by their
	// SHA-256 (never the token), an acceptance for CacheTTL or until the
	// token expires, a refusal for FailureTTL.
	cache *cache.LRUExpireCache
	// budgets refuses a caller's uncached tokens past its share.
	budgets *limiters
}

type cached struct {
	id  *TokenIdentity
	err error
}

// TokenIdentity is what a verified token says.
type TokenIdentity struct {
	Username, Namespace, ServiceAccount string
	PodName, PodUID, NodeName           string
}

// RuleServiceAccountToken names the rule that denies a request whose
// ServiceAccount token must not be used.
const RuleServiceAccountToken = "service-account-token"

// Rejection is a token that must not be used: its request is denied.
type Rejection struct{ Msg string }

func (r *Rejection) Error() string { return r.Msg }

// RefusalRule is RuleServiceAccountToken: a rejected token refuses its
// request (package apierr).
func (r *Rejection) RefusalRule() string { return RuleServiceAccountToken }

// Keys of the TokenOptions fields NewTokenVerifier's messages name (see
// package option).
const (
	OptionTokenReviewer = "identity.token.reviewer"
	OptionTokenAudience = "identity.token.audience"
	OptionTokenNodeName = "identity.token.node-name"
)

// NewTokenVerifier checks the options.
func NewTokenVerifier(o TokenOptions) (*TokenVerifier, error) {
	if o.Reviewer == nil {
		return nil, option.Errorf("token verification needs a Kubernetes client: set %s", option.Name{Key: OptionTokenReviewer, Field: "TokenOptions.Reviewer"})
	}
	if o.Audience == "" {
		return nil, option.Errorf("token verification needs an audience: set %s", option.Name{Key: OptionTokenAudience, Field: "TokenOptions.Audience"})
	}
	if o.NodeName == "" {
		return nil, option.Errorf("token verification needs this node's name: set %s", option.Name{Key: OptionTokenNodeName, Field: "TokenOptions.NodeName"})
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultTokenCacheTTL
	}
	if o.FailureTTL <= 0 {
		o.FailureTTL = DefaultTokenFailureTTL
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &TokenVerifier{o: o, cache: cache.NewLRUExpireCacheWithClock(MaxCachedTokens, o.Clock), budgets: newLimiters(o.Clock)}, nil
}

// Review asks the API server about a token c sent, or reuses a recent
// answer. A *Rejection means the API server refused the token, a
// *Throttled that c has had its share of new tokens reviewed; another error
// means no answer was obtained.
func (v *TokenVerifier) Review(ctx context.Context, c *Caller, token string) (*TokenIdentity, error) {
	if len(token) > MaxTokenBytes {
		return nil, &Rejection{Msg: fmt.Sprintf("the ServiceAccount token is %d bytes, more than the %d the agent reviews; send a projected ServiceAccount token", len(token), MaxTokenBytes)}
	}
	key := sha256.Sum256([]byte(token))
	if c, ok := v.cache.Get(key); ok {
		c := c.(cached)
		return c.id, c.err
	}
	if who := callerKey(c); !v.budgets.allow(who) {
		return nil, throttled(who)
	}
	ctx, cancel := context.WithTimeout(ctx, TokenReviewTimeout)
	defer cancel()
	tr, err := v.o.Reviewer.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{v.o.Audience}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("TokenReview failed: %w", err)
	}
	id, rerr := identityOf(tr, v.o.Audience)
	ttl := v.o.FailureTTL
	if rerr == nil {
		ttl = successTTL(token, v.o.Clock.Now(), v.o.CacheTTL)
	}
	if ttl > 0 {
		v.cache.Add(key, cached{id: id, err: rerr}, ttl)
	}
	return id, rerr
}

func identityOf(tr *authnv1.TokenReview, audience string) (*TokenIdentity, error) {
	st := tr.Status
	if !st.Authenticated {
		reason := st.Error
		if reason == "" {
			reason = "not authenticated"
		}
		return nil, &Rejection{Msg: fmt.Sprintf("the API server rejected the ServiceAccount token (%s); send a current token projected for audience %q", reason, audience)}
	}
	if !slices.Contains(st.Audiences, audience) {
		return nil, &Rejection{Msg: fmt.Sprintf("the ServiceAccount token is not for audience %q (it is for %v); project one with audience %q", audience, st.Audiences, audience)}
	}
	parts := strings.Split(st.User.Username, ":")
	if len(parts) != 4 || parts[0] != "system" || parts[1] != "serviceaccount" {
		return nil, &Rejection{Msg: fmt.Sprintf("the token's user %q is not a ServiceAccount; send a projected ServiceAccount token", st.User.Username)}
	}
	id := &TokenIdentity{Username: st.User.Username, Namespace: parts[2], ServiceAccount: parts[3]}
	first := func(k string) string {
		if v := st.User.Extra[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	id.PodName, id.PodUID, id.NodeName = first(extraPodName), first(extraPodUID), first(extraNodeName)
	if id.PodUID == "" {
		return nil, &Rejection{Msg: fmt.Sprintf("the token of %s is not bound to a pod; send the token of a projected serviceAccountToken volume, which names its pod", id.Username)}
	}
	return id, nil
}

// Apply verifies token and checks it against the caller's peer identity
// and this node; on success the caller takes the token's identity. pods,
// when set, confirms the pod of a token that does not name its node.
func (v *TokenVerifier) Apply(ctx context.Context, c *Caller, token string, pods PodLookup) error {
	id, err := v.Review(ctx, c, token)
	if err != nil {
		return err
	}
	pod := id.Namespace + "/" + id.PodName
	switch {
	case c.Unattributed != "":
		// The platform could place the process and did not: a token
		// cannot stand in for the pod it hides.
		return &Rejection{Msg: fmt.Sprintf("the token names pod %s (uid %s) but the calling process (pid %d) could not be attributed (%s); call from a process the agent can place in that pod", pod, id.PodUID, c.PID, c.Unattributed)}
	case c.PodMapped && c.PodUID == "":
		return &Rejection{Msg: fmt.Sprintf("the token names pod %s (uid %s) but the calling process (pid %d) is not in a pod; send no token, or call from that pod", pod, id.PodUID, c.PID)}
	case c.PodMapped && c.PodUID != id.PodUID:
		return &Rejection{Msg: fmt.Sprintf("the token names pod %s (uid %s) but the calling process (pid %d) runs in pod uid %s; a pod must send its own token", pod, id.PodUID, c.PID, c.PodUID)}
	}
	switch {
	case id.NodeName != "" && id.NodeName != v.o.NodeName:
		return &Rejection{Msg: fmt.Sprintf("the token names pod %s on node %q, but this is node %q", pod, id.NodeName, v.o.NodeName)}
	case id.NodeName == "":
		if _, ok := lookup(pods, id.PodUID); !ok {
			return &Rejection{Msg: fmt.Sprintf("the token names pod %s, which does not name its node and is not among this node's pods", pod)}
		}
	}
	if !c.PodMapped {
		c.Notes = append(c.Notes, "the calling process could not be mapped to a pod on this platform; the pod is the token's")
		c.PodUID = id.PodUID
	}
	c.Source, c.TokenUser = SourceToken, id.Username
	c.PodName, c.Namespace, c.ServiceAccount = id.PodName, id.Namespace, id.ServiceAccount
	return nil
}

func lookup(pods PodLookup, uid string) (PodInfo, bool) {
	if pods == nil {
		return PodInfo{}, false
	}
	return pods.PodByUID(uid)
}
