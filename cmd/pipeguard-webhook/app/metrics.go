package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Messages of the secure metrics endpoint's refusals, as the scraper reads
// them; they say what pipeguard-agent's endpoint says.
const (
	msgNoToken = "Unauthorized: no bearer token. Scrape /metrics with the token of a ServiceAccount " +
		"allowed to get /metrics (ClusterRole pipeguard-metrics-reader) in the header \"Authorization: Bearer <token>\""
	msgBadToken = "Unauthorized: the API server did not authenticate the bearer token " +
		"(malformed, expired, revoked, or issued for another cluster or audience). Scrape with a current ServiceAccount token of this cluster"
	msgForbidden = "Forbidden: user %q may not get /metrics. Bind it to the ClusterRole pipeguard-metrics-reader " +
		"(config/prometheus), or another role with nonResourceURLs [/metrics] and verbs [get]"
	// The cause stays in the webhook's log: it names the API server, which
	// an unauthenticated caller need not learn.
	msgReviewFailed = "internal error: the API server could not be asked to %s; " +
		"the webhook's log has the cause. Retry the scrape"
)

// What controller-runtime's filter answers (pkg/metrics/filters), which
// secureMetricsFilter rewrites into the messages above.
const (
	crAuthnFailed  = "Authentication failed"
	crDenied       = "Authorization denied for user "
	crAuthzFailed  = "Authorization for user "
	reviewTimeout  = 8 * time.Second
	maxRefusalBody = 4 << 10
)

// metricsOptions returns the options of the manager's metrics server. With
// secure, /metrics is HTTPS (a self-signed certificate made at start) and
// answers only a bearer token the API server authenticates (TokenReview)
// whose user it authorizes for get on /metrics (SubjectAccessReview).
func metricsOptions(addr string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if !secure {
		return o
	}
	o.SecureServing = true
	o.FilterProvider = secureMetricsFilter
	// HTTP/1.1 only, against HTTP/2's stream-reset attacks; a scrape needs
	// no more.
	o.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		c.NextProtos = []string{"http/1.1"}
	}}
	return o
}

// secureMetricsFilter is controller-runtime's authentication and
// authorization filter (filters.WithAuthenticationAndAuthorization) with
// refusals a scraper can act on: no token is 401, a token the API server
// does not authenticate is 401 (controller-runtime answers it 500), a user
// without get on /metrics is 403 naming the ClusterRole to bind, and only a
// review that could not be made is 503.
func secureMetricsFilter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	inner, err := filters.WithAuthenticationAndAuthorization(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authn, err := authnv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("the TokenReview client of secure metrics: %w", err)
	}
	reviews := authn.TokenReviews()
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		h, err := inner(log, next)
		if err != nil {
			return nil, err
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := bearerToken(r)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="pipeguard-webhook"`)
				http.Error(w, msgNoToken, http.StatusUnauthorized)
				return
			}
			rec := &refusalRecorder{w: w}
			h.ServeHTTP(rec, r)
			if !rec.held {
				return
			}
			body := strings.TrimSpace(rec.body.String())
			switch {
			case rec.code == http.StatusInternalServerError && body == crAuthnFailed,
				rec.code == http.StatusUnauthorized:
				// Either the API server refused the token or it could not
				// be asked: ask once more, to tell the two apart.
				ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
				defer cancel()
				tr, err := reviews.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
				switch {
				case err != nil:
					log.Error(err, "no TokenReview of a scraper's token; scrapes fail until the API server answers")
					http.Error(w, fmt.Sprintf(msgReviewFailed, "review the token"), http.StatusServiceUnavailable)
				case !tr.Status.Authenticated:
					log.V(1).Info("scrape refused: token not authenticated", "remote", r.RemoteAddr, "reason", tr.Status.Error)
					w.Header().Set("WWW-Authenticate", `Bearer realm="pipeguard-webhook", error="invalid_token"`)
					http.Error(w, msgBadToken, http.StatusUnauthorized)
				default:
					http.Error(w, fmt.Sprintf(msgReviewFailed, "review the token"), http.StatusServiceUnavailable)
				}
			case rec.code == http.StatusForbidden && strings.HasPrefix(body, crDenied):
				http.Error(w, fmt.Sprintf(msgForbidden, strings.TrimPrefix(body, crDenied)), http.StatusForbidden)
			case rec.code == http.StatusInternalServerError && strings.HasPrefix(body, crAuthzFailed):
				http.Error(w, fmt.Sprintf(msgReviewFailed, "check the scraper's access"), http.StatusServiceUnavailable)
			default:
				w.WriteHeader(rec.code)
				_, _ = w.Write(rec.body.Bytes())
			}
		}), nil
	}, nil
}

// bearerToken returns the token of the Authorization header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
}

// refusalRecorder passes a response through unless its status is one of
// the filter's refusals (401, 403, 500), whose short body it holds back to
// be rewritten.
type refusalRecorder struct {
	w       http.ResponseWriter
	decided bool
	held    bool
	code    int
	body    bytes.Buffer
}

func (r *refusalRecorder) Header() http.Header { return r.w.Header() }

func (r *refusalRecorder) WriteHeader(code int) {
	if r.decided {
		return
	}
	r.decided = true
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusInternalServerError:
		r.held, r.code = true, code
	default:
		r.w.WriteHeader(code)
	}
}

func (r *refusalRecorder) Write(p []byte) (int, error) {
	if !r.decided {
		r.WriteHeader(http.StatusOK)
	}
	if !r.held {
		return r.w.Write(p)
	}
	if r.body.Len() < maxRefusalBody {
		r.body.Write(p[:min(len(p), maxRefusalBody-r.body.Len())])
	}
	return len(p), nil
}

// Flush lets a streamed response through.
func (r *refusalRecorder) Flush() {
	if f, ok := r.w.(http.Flusher); ok && !r.held {
		f.Flush()
	}
}
