// Package app assembles pipeguard-webhook: a controller-runtime manager that
// serves the admission webhook over TLS, runs the policy controller on every
// replica, and exposes metrics and health probes. Every dependency is built
// in New, in one place. NewCommand is its command line: the flags, their
// checks and the exit codes.
package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/controller/policyreport"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// Path is where the webhook server answers AdmissionReviews.
const Path = "/validate"

// Options configure pipeguard-webhook.
type Options struct {
	// Config reaches the API server.
	Config *rest.Config
	Logger logr.Logger

	// WebhookHost and WebhookPort are where the TLS webhook server listens.
	WebhookHost string
	WebhookPort int
	// CertDir holds CertName and KeyName; they are reloaded when they change.
	CertDir, CertName, KeyName string
	// ClientCAFile, when set, is a PEM bundle of the CAs that sign the API
	// server's webhook client certificate: the webhook server then answers
	// only connections that present a certificate they verify. Reloaded
	// when it changes.
	ClientCAFile string
	// MaxReviewsInFlight bounds the reviews read and decided at once;
	// webhook.DefaultMaxInFlight when 0.
	MaxReviewsInFlight int
	// MaxConnections bounds the webhook server's open connections;
	// webhook.DefaultMaxConnections when 0.
	MaxConnections int
	// CertRotation, when set, issues and rotates the certificate in CertDir
	// and injects its CA; the webhook server starts only once the files
	// exist. When nil, the files must be provided (cert-manager, or by hand
	// for local runs).
	CertRotation *CertRotation

	// MetricsAddr serves /metrics; "0" disables it.
	MetricsAddr string
	// MetricsSecure serves /metrics over HTTPS to callers the API server
	// authenticates (TokenReview) and authorizes for get on the
	// non-resource URL /metrics (SubjectAccessReview); the webhook's
	// identity needs create on tokenreviews and subjectaccessreviews.
	// Without it /metrics is plain HTTP with no authentication.
	MetricsSecure bool
	// ProbeAddr serves /healthz and /readyz; "0" disables it.
	ProbeAddr string
	// Registry receives pipeguard's metrics. Defaults to controller-runtime's
	// registry, the one MetricsAddr serves.
	Registry prometheus.Registerer

	LeaderElect             bool
	LeaderElectionNamespace string

	// DrainDelay is how long the server keeps answering after SIGTERM while
	// readiness already fails, so endpoints drop it before it stops.
	DrainDelay time.Duration
	// MaxConcurrentEvaluations bounds concurrent rego evaluations.
	MaxConcurrentEvaluations int
	// DecisionCacheSize is how many decisions a policy generation without
	// admin-written rego remembers; 0 turns the cache off.
	// DefaultDecisionCacheSize is what pipeguard-webhook uses.
	DecisionCacheSize int
	// DecisionCacheBytes bounds the memory each policy generation's
	// decision cache keeps; 0 means DefaultDecisionCacheBytes. The cache
	// is off only when DecisionCacheSize is 0.
	DecisionCacheBytes int64
	// WebhookConfigName is the ValidatingWebhookConfiguration whose
	// HostProcess and claims entries the leader keeps in step with the
	// cluster (controller.Routing); empty leaves them alone.
	WebhookConfigName string
	// AdminRuleTimeout bounds the time the admin-written rules of one
	// evaluation may take together; policy.DefaultAdminRuleTimeout when
	// zero.
	AdminRuleTimeout time.Duration
	// AuditInterval is how often the leader audits existing objects
	// against the policies in force; controller.DefaultAuditInterval when
	// zero.
	AuditInterval time.Duration
}

// App is an assembled pipeguard-webhook.
type App struct {
	opts       Options
	mgr        manager.Manager
	engine     *policy.Engine
	controller *controller.Controller
	draining   atomic.Bool
	// certsReady is closed once the serving certificate can be loaded.
	certsReady <-chan struct{}
}

// LeaderElectionID names the lease replicas compete for.
const LeaderElectionID = "pipeguard-webhook.pipeguard.io"

// DefaultDecisionCacheSize is how many decisions pipeguard-webhook
// remembers per policy generation unless told otherwise. Only objects that
// mount a pipe need a decision, and few pod templates do (CSI node
// plugins, mostly), so this covers them in many namespaces. An entry is
// its key and one decision: a few kilobytes for an ordinary pod template,
// but tens of kilobytes for a pod with many long pipe paths, which is why
// DefaultDecisionCacheBytes bounds their memory as well.
const DefaultDecisionCacheSize = 1024

// DefaultDecisionCacheBytes bounds the memory of pipeguard-webhook's
// decision cache unless told otherwise: room for DefaultDecisionCacheSize
// decisions of ordinary pod templates several times over, while
// DefaultDecisionCacheSize decisions on pods with many long pipe paths,
// which could take tens of megabytes, stay within it.
const DefaultDecisionCacheBytes = policy.DefaultDecisionCacheBytes

// New builds the manager and everything it runs.
func New(ctx context.Context, opts Options) (*App, error) {
	if opts.Registry == nil {
		opts.Registry = ctrlmetrics.Registry
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	tlsServer, err := newServer(ServerOptions{
		Host: opts.WebhookHost, Port: opts.WebhookPort,
		CertDir: opts.CertDir, CertName: opts.CertName, KeyName: opts.KeyName,
		ClientCAFile: opts.ClientCAFile, MaxConnections: opts.MaxConnections,
		Logger: opts.Logger.WithName("webhook-server"),
	})
	if err != nil {
		return nil, err
	}
	var server ctrlwebhook.Server = tlsServer
	certsReady := make(chan struct{})
	if opts.CertRotation == nil {
		close(certsReady)
	} else {
		server = gatedServer{Server: server, ready: certsReady}
	}
	mgr, err := ctrl.NewManager(opts.Config, manager.Options{
		Scheme:                  scheme,
		Cache:                   cacheOptions(),
		Logger:                  opts.Logger,
		Metrics:                 metricsOptions(opts.MetricsAddr, opts.MetricsSecure),
		HealthProbeBindAddress:  opts.ProbeAddr,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// Release the lease on shutdown so a rolling update elects the next
		// leader at once.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 server,
		// Runnables that log through their context, such as the
		// background audit, log through opts.Logger.
		BaseContext: func() context.Context { return logr.NewContext(context.Background(), opts.Logger) },
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	a := &App{opts: opts, mgr: mgr, certsReady: certsReady}
	if opts.CertRotation != nil {
		// The rotator closes certsReady once the files exist and the CA
		// is injected; the gated server and readiness wait for it.
		if err := addCertRotator(mgr, opts, certsReady); err != nil {
			return nil, err
		}
	}

	engine, err := policy.NewEngine(ctx, policy.Options{
		MaxConcurrent:      opts.MaxConcurrentEvaluations,
		DecisionCacheSize:  opts.DecisionCacheSize,
		DecisionCacheBytes: opts.DecisionCacheBytes,
		AdminRuleTimeout:   opts.AdminRuleTimeout, Namer: flagName,
	})
	if err != nil {
		return nil, err
	}
	controllerMetrics, err := controller.NewMetrics(opts.Registry)
	if err != nil {
		return nil, fmt.Errorf("registering policy metrics: %w", err)
	}
	a.engine = engine
	var elected <-chan struct{}
	if opts.LeaderElect {
		elected = mgr.Elected()
	}
	// PolicyReports are always on: without their CRDs the writer finds
	// them missing on each pass and writes nothing.
	disco, err := discovery.NewDiscoveryClientForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("the PolicyReport writer's discovery client: %w", err)
	}
	reports, err := policyreport.NewWriter(policyreport.Options{Client: mgr.GetClient(), Discovery: disco})
	if err != nil {
		return nil, err
	}
	var auditor *controller.Auditor
	routes, err := addRoutings(mgr, opts, scheme, engine, func() *controller.AuditReport { return auditor.Last() })
	if err != nil {
		return nil, err
	}
	auditor, err = controller.NewAuditor(controller.AuditorOptions{
		Config: opts.Config, Scheme: scheme, Client: mgr.GetClient(), Engine: engine,
		Interval: opts.AuditInterval, Metrics: controllerMetrics.Audit(),
		// Events are written one by one, so that one the API server
		// refuses is counted in pipeguard_event_failures_total, not lost.
		Recorder: controller.NewEventWriter(mgr.GetClient(), "pipeguard-audit", controllerMetrics, opts.Logger.WithName("events")),
		Reports:  reports,
		OnPass:   routes.onPass,
	})
	if err != nil {
		return nil, fmt.Errorf("the background audit: %w", err)
	}
	// The auditor runs on the leader only (it needs leader election).
	if err := mgr.Add(auditor); err != nil {
		return nil, fmt.Errorf("adding the audit: %w", err)
	}
	a.controller = controller.New(controller.Options{
		Client:   mgr.GetClient(),
		Engine:   engine,
		Recorder: controller.NewEventWriter(mgr.GetClient(), "pipeguard-webhook", controllerMetrics, opts.Logger.WithName("events")),
		Elected:  elected,
		Metrics:  controllerMetrics,
		OnLoad:   func() { auditor.Trigger(); routes.onLoad() },
		// ServiceAccounts that policies name are read one GET at a time,
		// never cached cluster-wide; a missing one is looked for again
		// every audit interval.
		APIReader: mgr.GetAPIReader(),
		Recheck:   opts.AuditInterval,
	})
	if err := a.controller.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the policy controller: %w", err)
	}

	// Namespace labels come from a metadata-only informer; starting it here
	// makes the manager wait for it to sync like any other.
	nsInformer, err := mgr.GetCache().GetInformer(ctx, namespaceMetadata())
	if err != nil {
		return nil, fmt.Errorf("watching namespaces: %w", err)
	}

	admissionMetrics, err := webhook.NewMetrics(opts.Registry)
	if err != nil {
		return nil, fmt.Errorf("registering admission metrics: %w", err)
	}
	handler := webhook.NewHandler(webhook.Options{
		Engine:     engine,
		Namespaces: webhook.CachedNamespaces{Reader: mgr.GetCache()},
		Grants:     webhook.SubjectAccessReviewGrants{Client: mgr.GetClient()},
		// Claims are looked up one GET at a time, never cached: pods
		// reach the webhook for them only while the audit finds a
		// protected PersistentVolume (claims.pipeguard.io).
		Claims:   webhook.ReaderClaims{Reader: mgr.GetAPIReader()},
		Observer: admissionMetrics,
	})
	server = mgr.GetWebhookServer()
	server.Register(Path, webhook.Bound(&admission.Webhook{Handler: handler, RecoverPanic: ptr.To(true)},
		webhook.ServeOptions{MaxInFlight: opts.MaxReviewsInFlight}))

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	ready := func(req *http.Request) error {
		switch {
		case a.draining.Load():
			return errors.New("shutting down")
		case !closed(a.certsReady):
			return a.certPending()
		case !nsInformer.HasSynced():
			return errors.New("namespace cache has not synced")
		case !a.controller.Loaded():
			return errors.New("policies have not been compiled yet")
		}
		return server.StartedChecker()(req)
	}
	if err := mgr.AddReadyzCheck("pipeguard", ready); err != nil {
		return nil, err
	}
	return a, nil
}

// Engine returns the policy engine the webhook decides with.
func (a *App) Engine() *policy.Engine { return a.engine }

// Ready reports whether the app would pass its readiness probe.
func (a *App) Ready() bool {
	return !a.draining.Load() && closed(a.certsReady) && a.controller.Loaded()
}

// certPending says what readiness waits for while the certificate is
// being issued.
func (a *App) certPending() error {
	c := a.opts.CertRotation
	return fmt.Errorf("serving certificate not ready: waiting for Secret %s/%s to hold it, for its files in %s and for the CA bundle of ValidatingWebhookConfiguration %s",
		c.Namespace, c.SecretName, a.opts.CertDir, c.WebhookConfigName)
}

// Run serves until ctx ends, then fails readiness, keeps answering for
// DrainDelay, and stops gracefully.
func (a *App) Run(ctx context.Context) error {
	mgrCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done := make(chan error, 1)
	go func() { done <- a.mgr.Start(mgrCtx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	a.draining.Store(true)
	a.opts.Logger.Info("shutting down: readiness fails now, serving for the drain delay", "drainDelay", a.opts.DrainDelay)
	select {
	case err := <-done:
		return err
	case <-time.After(a.opts.DrainDelay):
	}
	stop()
	return <-done
}

// cacheOptions keeps of each cached namespace only what reviews read.
func cacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		namespaceMetadata(): {Transform: namespaceNameAndLabels},
	}}
}

// namespaceNameAndLabels drops from a namespace what reviews never read
// (annotations, such as kubectl's last-applied-configuration, managed
// fields and owner references) before the informer caches it, so that a
// cluster with many namespaces costs less memory and each review's copy
// of the namespace less time. Anything but an object, such as the
// informer's tombstone for a deletion it missed, is kept as it is.
func namespaceNameAndLabels(in any) (any, error) {
	if obj, ok := in.(metav1.Object); ok {
		obj.SetAnnotations(nil)
		obj.SetManagedFields(nil)
		obj.SetOwnerReferences(nil)
	}
	return in, nil
}

func namespaceMetadata() *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}
