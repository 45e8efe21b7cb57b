package app

import (
	"crypto/tls"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/pipeguard/pipeguard/internal/metricsauth"
)

// metricsOptions returns the options of the manager's metrics server. With
// secure, /metrics is HTTPS (a self-signed certificate made at start) and
// answers only a bearer token the API server authenticates (TokenReview)
// whose user it authorizes for get on /metrics (SubjectAccessReview),
// through the filter pipeguard-agent's endpoint uses.
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

// secureMetricsFilter is the metrics server's filter: no token or one the
// API server does not authenticate is 401, a user without get on /metrics
// is 403 naming the ClusterRole to bind, only a review that could not be
// made is 503, and answers on tokens (refusals too) are remembered.
func secureMetricsFilter(cfg *rest.Config, _ *http.Client) (metricsserver.Filter, error) {
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		f, err := metricsauth.New(cfg, log, metricsauth.Options{Component: "pipeguard-webhook"})
		if err != nil {
			return nil, err
		}
		return f.Wrap(next), nil
	}, nil
}
