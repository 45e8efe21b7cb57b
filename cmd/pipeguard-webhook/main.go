// Command pipeguard-webhook serves pipeguard's validating admission webhook
// and keeps its policies in step with the cluster's PipeAccessPolicies.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/internal/version"
	"github.com/pipeguard/pipeguard/webhook"
)

func main() {
	os.Exit(run())
}

func run() int {
	opts := app.Options{}
	fs := flag.NewFlagSet("pipeguard-webhook", flag.ContinueOnError)
	fs.StringVar(&opts.WebhookHost, "webhook-host", "", "address the webhook server listens on (all addresses when empty)")
	fs.IntVar(&opts.WebhookPort, "webhook-port", 9443, "port of the webhook server (TLS)")
	fs.StringVar(&opts.CertDir, "webhook-cert-path", "/tmp/k8s-webhook-server/serving-certs", "directory holding the webhook server's certificate and key")
	fs.StringVar(&opts.CertName, "webhook-cert-name", "tls.crt", "certificate file name in --webhook-cert-path")
	fs.StringVar(&opts.KeyName, "webhook-cert-key", "tls.key", "key file name in --webhook-cert-path")
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8080", "address of the /metrics endpoint; 0 disables it")
	fs.BoolVar(&opts.MetricsSecure, "metrics-secure", false, "serve /metrics over HTTPS only to callers whose token the API server authenticates and authorizes for get on /metrics (ClusterRole pipeguard-metrics-reader); the Deployment of config/manager sets it. Without it /metrics is plain HTTP with no authentication: local runs only")
	fs.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 disables them")
	fs.BoolVar(&opts.LeaderElect, "leader-elect", false, "elect a leader among replicas; only the leader writes policy status")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (the pod's namespace when empty)")
	fs.DurationVar(&opts.DrainDelay, "drain-delay", 5*time.Second, "after SIGTERM, keep serving this long with readiness failing so no admission call is dropped")
	fs.IntVar(&opts.MaxConcurrentEvaluations, "max-concurrent-evaluations", 0, "bound on concurrent rego evaluations (default 2 per CPU)")
	fs.IntVar(&opts.DecisionCacheSize, "decision-cache-size", app.DefaultDecisionCacheSize, "decisions each policy generation without admin-written rego remembers, keyed on the facts its rules read (pods of one DaemonSet or Deployment share one); 0 turns the cache off. --decision-cache-bytes bounds their memory as well")
	cacheBytes := fs.Int64("decision-cache-bytes", app.DefaultDecisionCacheBytes, "bound in bytes on the memory each policy generation's decision cache keeps (keys, decisions with their messages, and map overhead; a decision bigger than half of it is not remembered); the cache holds at most --decision-cache-size decisions within it; 0 turns the cache off")
	fs.DurationVar(&opts.AdminRuleTimeout, app.AdminRuleTimeoutFlag, app.DefaultAdminRuleTimeout, "bound on the time the admin-written rules (spec.rego) of all policies may take together on one object; an object whose rules take longer is rejected with an internal error naming the policy (fail closed), and the audit reports it as error. Keep it well under the API server's 5s webhook timeout")
	fs.DurationVar(&opts.AuditInterval, "audit-interval", 60*time.Second, "how often the leader audits existing Pods, workloads and PersistentVolumes against the policies in force (also at start, on every policy change and on namespace label changes); results go to policy status, metrics and events")
	fs.StringVar(&opts.ClientCAFile, "client-ca-file", "", "PEM bundle of the CAs that sign the API server's webhook client certificate (the kubeconfig of the admission configuration's WebhookAdmissionConfiguration); when set, connections without a certificate they verify get no answer, so nothing but the API server can send reviews. Read again when it changes")
	fs.IntVar(&opts.MaxReviewsInFlight, "max-reviews-in-flight", webhook.DefaultMaxInFlight, "reviews read and decided at once; more wait for a slot until their deadline, then get an internal error; each takes 25 to 40 MiB at the bounds of a review (3 MiB), so the default keeps a flood under half the Deployment's 512Mi")
	fs.IntVar(&opts.MaxConnections, "max-connections", webhook.DefaultMaxConnections, "connections the webhook server keeps open at once, TLS handshakes included; more wait in the listen queue")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file; in-cluster configuration when empty")
	certRotation := fs.Bool("cert-rotation", false, "issue and rotate the serving certificate: keep it in Secret --cert-secret-name (mounted at --webhook-cert-path), inject its CA into --webhook-config-name, and serve only once it exists; off for local runs, which bring their own certificate")
	rotation := app.CertRotation{}
	fs.StringVar(&rotation.SecretName, "cert-secret-name", "pipeguard-webhook-cert", "Secret holding the CA and serving certificate, with --cert-rotation")
	fs.StringVar(&rotation.Namespace, "namespace", "", "namespace of the certificate Secret and the webhook Service, with --cert-rotation (the pod's namespace when empty)")
	fs.StringVar(&rotation.ServiceName, "service-name", "pipeguard-webhook", "Service the API server calls, with --cert-rotation: the certificate is for <service-name>.<namespace>.svc")
	fs.StringVar(&rotation.WebhookConfigName, "webhook-config-name", "pipeguard", "ValidatingWebhookConfiguration that receives the CA bundle, with --cert-rotation, and whose hostprocess.pipeguard.io and claims.pipeguard.io entries the leader turns on while a policy in force withholds the HostProcess allowance, and while the audit finds a protected PersistentVolume; empty leaves those entries alone")
	showVersion := fs.Bool("version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if err := checkServerFlags(opts); err != nil {
		fmt.Fprintf(os.Stderr, "pipeguard-webhook: %v\n", err)
		return 2
	}
	switch {
	case *cacheBytes < 0:
		fmt.Fprintf(os.Stderr, "pipeguard-webhook: --decision-cache-bytes %d: want a number of bytes (default %d), or 0 to turn the decision cache off\n", *cacheBytes, app.DefaultDecisionCacheBytes)
		return 2
	case *cacheBytes == 0:
		opts.DecisionCacheSize = 0
	default:
		opts.DecisionCacheBytes = *cacheBytes
	}
	if *showVersion {
		fmt.Println("pipeguard-webhook", version.Get())
		return 0
	}

	log := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	opts.Logger = log

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pipeguard-webhook: %v\n", err)
		return 1
	}
	opts.Config = cfg
	opts.WebhookConfigName = rotation.WebhookConfigName
	if *certRotation {
		if rotation.Namespace == "" {
			if rotation.Namespace, err = podNamespace(); err != nil {
				fmt.Fprintf(os.Stderr, "pipeguard-webhook: --namespace: %v\n", err)
				return 2
			}
		}
		opts.CertRotation = &rotation
	}
	ctx := ctrl.SetupSignalHandler()
	a, err := app.New(ctx, opts)
	if err != nil {
		log.Error(err, "cannot start")
		return 1
	}
	if err := a.Run(ctx); err != nil {
		log.Error(err, "stopped with an error")
		return 1
	}
	log.Info("stopped")
	return 0
}
