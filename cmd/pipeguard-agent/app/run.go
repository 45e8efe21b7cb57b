package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/internal/option"
)

// podSyncTimeout bounds the wait for the first pod list.
const podSyncTimeout = time.Minute

// Config is all of pipeguard-agent: the servers and the guard in front of
// them. The command line maps onto it one to one.
type Config struct {
	Agent Options
	Guard GuardConfig
}

// GuardConfig configures what every request passes: the gate, the audit
// log and, with a Kubeconfig, the pod watch and token verifier.
type GuardConfig struct {
	// PolicyDir holds admin agent policies; empty: the shipped rules alone.
	PolicyDir string
	// CRIEndpoint is the container runtime's CRI socket or pipe, through
	// which callers that their platform did not map to a pod (every
	// Windows caller) are mapped; empty or "none": not mapped.
	CRIEndpoint string
	// CRITimeout bounds the CRI lookups of one connection's caller; 0:
	// identity.DefaultCRITimeout.
	CRITimeout time.Duration
	// Kubeconfig is a kubeconfig file or "in-cluster"; empty: callers are
	// not mapped to pods and tokens are not verified.
	Kubeconfig    string
	NodeName      string
	TokenAudience string
	Audit         audit.Options
	AuditLevel    audit.Level
	AuditFailure  guard.FailureMode
	// AuditAnchor configures the publication of the audit chain head to
	// the cluster, which happens when Kubeconfig and NodeName are set.
	AuditAnchor AnchorConfig
	// AuditWebhook sends every record to a receiver when its ConfigFile
	// is set.
	AuditWebhook audit.WebhookOptions
}

// OptionError is a configuration value the agent cannot start with. Option
// names the field of Config (e.g. "Guard.PolicyDir"), its key for the
// command line to name its flag (see Render).
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// Render is the message with the option, and the options Err names, called
// as n calls them (the agent names its flags); it makes an OptionError an
// option.Renderer.
func (e *OptionError) Render(n option.Namer) string {
	name := e.Option
	if n != nil {
		if s, ok := n(e.Option); ok {
			name = s
		}
	}
	return name + ": " + option.Message(e.Err, n)
}

// Run assembles the agent with its gate, identity and audit log, listens,
// reports the addresses to ready (when set), and serves until ctx is done.
// A configuration it cannot start with is an *OptionError.
func Run(ctx context.Context, cfg Config, ready func(addresses []string)) (err error) {
	log := cfg.Agent.Log
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	g, outs, err := NewGuard(ctx, cfg.Guard, cfg.Agent)
	if err != nil {
		return err
	}
	defer func() {
		outs.Stop()
		if cerr := g.Audit.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the audit log: %w", cerr))
		}
		outs.Final(context.WithoutCancel(ctx))
	}()
	if cfg.Agent.Registry == nil {
		cfg.Agent.Registry = prometheus.NewRegistry()
	}
	if err := outs.Start(ctx, cfg.Agent.Registry); err != nil {
		return err
	}
	go func() {
		if err := g.Gate.Watch(ctx, gate.DefaultRescan); err != nil {
			log.Error(err, "agent policies are not watched; restart the agent to load changes", "dir", cfg.Guard.PolicyDir)
		}
	}()

	cfg.Agent.Guard = g
	if cfg.Agent.MetricsSecure && cfg.Agent.MetricsAuth == nil && cfg.Guard.Kubeconfig != "" {
		// Scrapers' tokens are reviewed by the cluster the agent watches.
		if cfg.Agent.MetricsAuth, err = restConfig(cfg.Guard.Kubeconfig); err != nil {
			return &OptionError{Option: "Guard.Kubeconfig", Err: err}
		}
	}
	cri, err := criPeer(cfg.Guard.CRIEndpoint, cfg.Guard.CRITimeout)
	if err != nil {
		return err
	}
	if cri != nil {
		defer func() { _ = cri.Close() }()
		cfg.Agent.Peer = identity.WithCRI(cfg.Agent.Peer, cri)
		cfg.Agent.PeerTimeout = cfg.Guard.CRITimeout
		if cfg.Agent.PeerTimeout == 0 {
			cfg.Agent.PeerTimeout = identity.DefaultCRITimeout
		}
	}
	a, err := New(cfg.Agent)
	if err != nil {
		return &OptionError{Option: "Agent", Err: err}
	}
	if err := a.Listen(ctx); err != nil {
		return fmt.Errorf("cannot listen: %w", err)
	}
	log.Info("listening", "addresses", a.Addresses(), "kubeletPath", cfg.Agent.KubeletPath, "workingDirs", cfg.Agent.WorkingDirs,
		"auditLogPath", cfg.Guard.Audit.Path, "policyDir", cfg.Guard.PolicyDir)
	if ready != nil {
		ready(a.Addresses())
	}
	if err := a.Serve(ctx); err != nil {
		return fmt.Errorf("serving failed: %w", err)
	}
	return nil
}

// NewGuard builds the gate, the audit log and its outputs (the anchor
// publisher with a kubeconfig, the webhook backend with a webhook config)
// and, with a kubeconfig, the pod watch and token verifier. The caller
// closes the audit log.
func NewGuard(ctx context.Context, c GuardConfig, o Options) (*guard.Options, *auditOutputs, error) {
	engine, err := gate.New(ctx, gate.Options{PolicyDir: c.PolicyDir, Log: o.Log.WithName("gate")})
	if err != nil {
		return nil, nil, &OptionError{Option: "Guard.PolicyDir", Err: err}
	}
	g := &guard.Options{Gate: engine, Level: c.AuditLevel, Failure: c.AuditFailure}
	ao := c.Audit
	var client kubernetes.Interface
	if c.Kubeconfig != "" {
		if client, err = kubeClient(c.Kubeconfig); err != nil {
			return nil, nil, &OptionError{Option: "Guard.Kubeconfig", Err: err}
		}
		pods, err := identity.NewPodIndex(client, c.NodeName)
		if err != nil {
			return nil, nil, &OptionError{Option: "Guard.NodeName", Err: err}
		}
		if err := pods.Start(ctx, podSyncTimeout); err != nil {
			return nil, nil, option.Errorf("watching the node's pods (%s %s): %w", option.Name{Key: "Guard.Kubeconfig", Field: "Guard.Kubeconfig"}, c.Kubeconfig, err)
		}
		// TokenReviews go through a client of their own, so that a flood
		// of tokens cannot delay the pod watch or the anchor publisher.
		reviews, err := tokenReviewClient(c.Kubeconfig)
		if err != nil {
			return nil, nil, &OptionError{Option: "Guard.Kubeconfig", Err: err}
		}
		tokens, err := identity.NewTokenVerifier(identity.TokenOptions{
			Reviewer: reviews.AuthenticationV1().TokenReviews(), Audience: c.TokenAudience, NodeName: c.NodeName})
		if err != nil {
			return nil, nil, &OptionError{Option: "Guard.TokenAudience", Err: err}
		}
		g.Pods, g.Tokens = pods, tokens
	}
	outs, err := newAuditOutputs(client, c, o.Log, &ao, func() (audit.Head, error) { return g.Audit.Head() })
	if err != nil {
		return nil, nil, err
	}
	ao.Log = o.Log.WithName("audit")
	if g.Audit, err = audit.Open(ao); err != nil {
		return nil, nil, &OptionError{Option: "Guard.Audit.Path", Err: err}
	}
	if outs.webhook != nil {
		outs.webhook.ReportTo(g.Audit)
	}
	return g, outs, nil
}

// criPeer connects to the CRI endpoint; nil when the mapping is disabled.
func criPeer(endpoint string, timeout time.Duration) (*identity.CRIResolver, error) {
	ep, ok, err := identity.ParseCRIEndpoint(endpoint)
	if err != nil {
		return nil, &OptionError{Option: "Guard.CRIEndpoint", Err: err}
	}
	if !ok {
		return nil, nil
	}
	if timeout < 0 {
		return nil, &OptionError{Option: "Guard.CRITimeout", Err: fmt.Errorf("%s is negative", timeout)}
	}
	r, err := identity.NewCRIResolver(identity.CRIOptions{Endpoint: ep, Timeout: timeout})
	if err != nil {
		return nil, &OptionError{Option: "Guard.CRIEndpoint", Err: err}
	}
	return r, nil
}

func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}

// tokenReviewClient is the token verifier's client: its own rate budget
// (identity.TokenReviewConfig).
func tokenReviewClient(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(identity.TokenReviewConfig(rc))
}

// restConfig reads kubeconfig, a file or "in-cluster".
func restConfig(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig == "in-cluster" {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kubeconfig, err)
	}
	rc.UserAgent = "pipeguard-agent"
	return rc, nil
}
