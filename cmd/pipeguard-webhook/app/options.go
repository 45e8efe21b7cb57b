package app

import (
	"flag"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/pipeguard/pipeguard/webhook"
)

// CommandOptions are pipeguard-webhook's command line: what its flags set,
// before the command turns them into the Options of an App.
type CommandOptions struct {
	// App holds the Options the flags set one to one. No flag sets its
	// CertRotation, WebhookConfigName and DecisionCacheBytes, which
	// Options derives, nor its Config and Logger, which the command sets
	// when it starts; its Registry stays controller-runtime's.
	App Options
	// DecisionCacheBytes is --decision-cache-bytes: 0 turns the decision
	// cache off, whatever App.DecisionCacheSize says.
	DecisionCacheBytes int64
	// Kubeconfig is the kubeconfig file; the in-cluster or KUBECONFIG
	// configuration when empty.
	Kubeconfig string
	// CertRotation has the webhook issue and rotate its serving
	// certificate as Rotation says.
	CertRotation bool
	// Rotation names the Secret, Service and ValidatingWebhookConfiguration
	// of the certificate. Its WebhookConfigName also names the webhook
	// configuration whose entries the leader keeps in step, with or
	// without CertRotation.
	Rotation CertRotation
	// Version prints the version instead of serving.
	Version bool
	// Zap configures the log.
	Zap zap.Options
}

// AddFlags declares pipeguard-webhook's flags on fs, each with its
// default, and binds them to o.
func (o *CommandOptions) AddFlags(fs *flag.FlagSet) {
	a := &o.App
	fs.StringVar(&a.WebhookHost, "webhook-host", "", "address the webhook server listens on (all addresses when empty)")
	fs.IntVar(&a.WebhookPort, "webhook-port", 9443, "port of the webhook server (TLS)")
	fs.StringVar(&a.CertDir, "webhook-cert-path", "/tmp/k8s-webhook-server/serving-certs", "directory holding the webhook server's certificate and key")
	fs.StringVar(&a.CertName, "webhook-cert-name", "tls.crt", "certificate file name in --webhook-cert-path")
	fs.StringVar(&a.KeyName, "webhook-cert-key", "tls.key", "key file name in --webhook-cert-path")
	fs.StringVar(&a.MetricsAddr, "metrics-bind-address", ":8080", "address of the /metrics endpoint; 0 disables it")
	fs.BoolVar(&a.MetricsSecure, "metrics-secure", false, "serve /metrics over HTTPS only to callers whose token the API server authenticates and authorizes for get on /metrics (ClusterRole pipeguard-metrics-reader); the Deployment of config/manager sets it. Without it /metrics is plain HTTP with no authentication: local runs only")
	fs.StringVar(&a.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 disables them")
	fs.BoolVar(&a.LeaderElect, "leader-elect", false, "elect a leader among replicas; only the leader writes policy status")
	fs.StringVar(&a.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (the pod's namespace when empty)")
	fs.DurationVar(&a.DrainDelay, "drain-delay", 5*time.Second, "after SIGTERM, keep serving this long with readiness failing so no admission call is dropped")
	fs.IntVar(&a.MaxConcurrentEvaluations, "max-concurrent-evaluations", 0, "bound on concurrent rego evaluations (default 2 per CPU)")
	fs.IntVar(&a.DecisionCacheSize, "decision-cache-size", DefaultDecisionCacheSize, "decisions each policy generation without admin-written rego remembers, keyed on the facts its rules read (pods of one DaemonSet or Deployment share one); 0 turns the cache off. --decision-cache-bytes bounds their memory as well")
	fs.Int64Var(&o.DecisionCacheBytes, "decision-cache-bytes", DefaultDecisionCacheBytes, "bound in bytes on the memory each policy generation's decision cache keeps (keys, decisions with their messages, and map overhead; a decision bigger than half of it is not remembered); the cache holds at most --decision-cache-size decisions within it; 0 turns the cache off")
	fs.DurationVar(&a.AdminRuleTimeout, AdminRuleTimeoutFlag, DefaultAdminRuleTimeout, "bound on the time the admin-written rules (spec.rego) of all policies may take together on one object; an object whose rules take longer is rejected with an internal error naming the policy (fail closed), and the audit reports it as error. Keep it well under the API server's 5s webhook timeout")
	fs.DurationVar(&a.AuditInterval, "audit-interval", 60*time.Second, "how often the leader audits existing Pods, workloads and PersistentVolumes against the policies in force (also at start, on every policy change and on namespace label changes); results go to policy status, metrics and events")
	fs.StringVar(&a.ClientCAFile, "client-ca-file", "", "PEM bundle of the CAs that sign the API server's webhook client certificate (the kubeconfig of the admission configuration's WebhookAdmissionConfiguration); when set, connections without a certificate they verify get no answer, so nothing but the API server can send reviews. Read again when it changes")
	fs.IntVar(&a.MaxReviewsInFlight, "max-reviews-in-flight", webhook.DefaultMaxInFlight, "reviews read and decided at once; more wait for a slot until their deadline, then get an internal error; each takes 25 to 40 MiB at the bounds of a review (3 MiB), so the default keeps a flood under half the Deployment's 512Mi")
	fs.IntVar(&a.MaxConnections, "max-connections", webhook.DefaultMaxConnections, "connections the webhook server keeps open at once, TLS handshakes included; more wait in the listen queue")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file; in-cluster configuration when empty")
	fs.BoolVar(&o.CertRotation, "cert-rotation", false, "issue and rotate the serving certificate: keep it in Secret --cert-secret-name (mounted at --webhook-cert-path), inject its CA into --webhook-config-name, and serve only once it exists; off for local runs, which bring their own certificate")
	r := &o.Rotation
	fs.StringVar(&r.SecretName, "cert-secret-name", "pipeguard-webhook-cert", "Secret holding the CA and serving certificate, with --cert-rotation")
	fs.StringVar(&r.Namespace, "namespace", "", "namespace of the certificate Secret and the webhook Service, with --cert-rotation (the pod's namespace when empty)")
	fs.StringVar(&r.ServiceName, "service-name", "pipeguard-webhook", "Service the API server calls, with --cert-rotation: the certificate is for <service-name>.<namespace>.svc")
	fs.StringVar(&r.WebhookConfigName, "webhook-config-name", "pipeguard", "ValidatingWebhookConfiguration that receives the CA bundle, with --cert-rotation, and whose hostprocess.pipeguard.io and claims.pipeguard.io entries the leader turns on while a policy in force withholds the HostProcess allowance, and while the audit finds a protected PersistentVolume; empty leaves those entries alone")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
	o.Zap.BindFlags(fs)
}

// Validate checks the flags that cannot work before anything starts; its
// error names the flag, what is wrong and what it wants.
func (o *CommandOptions) Validate() error {
	a := o.App
	switch {
	case a.MaxReviewsInFlight < 1:
		return fmt.Errorf("--max-reviews-in-flight %d: want at least 1 (default %d)", a.MaxReviewsInFlight, webhook.DefaultMaxInFlight)
	case a.MaxConnections < 1:
		return fmt.Errorf("--max-connections %d: want at least 1 (default %d)", a.MaxConnections, webhook.DefaultMaxConnections)
	case a.ClientCAFile != "":
		if err := CheckClientCAFile(a.ClientCAFile); err != nil {
			return fmt.Errorf("--client-ca-file: %w", err)
		}
	}
	if o.DecisionCacheBytes < 0 {
		return fmt.Errorf("--decision-cache-bytes %d: want a number of bytes (default %d), or 0 to turn the decision cache off", o.DecisionCacheBytes, DefaultDecisionCacheBytes)
	}
	return nil
}

// Options returns the App's Options the flags describe, but for Config
// and Logger, which the command sets when it starts. With CertRotation,
// Options.CertRotation is Rotation as given: an empty namespace is the
// pod's, which the command looks up.
func (o *CommandOptions) Options() Options {
	opts := o.App
	if o.DecisionCacheBytes == 0 {
		opts.DecisionCacheSize = 0
	} else {
		opts.DecisionCacheBytes = o.DecisionCacheBytes
	}
	opts.WebhookConfigName = o.Rotation.WebhookConfigName
	if o.CertRotation {
		rotation := o.Rotation
		opts.CertRotation = &rotation
	}
	return opts
}
