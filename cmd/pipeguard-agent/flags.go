package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/app"
)

// DefaultAuditMaxBackups is how many rotated audit files the agent keeps
// unless told otherwise: with the default size of 100 MB, the audit log
// takes about 1.1 GB of the node's disk at most (the current file and ten
// backups), instead of growing until the disk is full.
const DefaultAuditMaxBackups = 10

// DefaultHealthProbeAddr is where the probes are served unless told
// otherwise: on loopback only, since they answer anyone unauthenticated. A
// kubelet on the node reaches it where the agent runs on the host network
// (a HostProcess container, a Windows service) with its probes' host set
// to 127.0.0.1, as config/agent does.
const DefaultHealthProbeAddr = "127.0.0.1:8889"

// config is the parsed command line.
type config struct {
	app.Config
	verbosity      int
	windowsService bool
	serviceName    string
	logFile        string
	showVersion    bool
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	*l = append(*l, v)
	return nil
}

func defaultAuditLogPath() string {
	if runtime.GOOS == "windows" {
		return `C:\var\log\pipeguard\audit.log`
	}
	return "/var/log/pipeguard/audit.log"
}

func defaultKubeletPath() string {
	if runtime.GOOS == "windows" {
		return `C:\var\lib\kubelet`
	}
	return "/var/lib/kubelet"
}

// parseFlags returns the config, or ok=false with the exit code when the
// agent must not start (bad flags: 2; -h: 0).
func parseFlags(args []string, stderr io.Writer) (cfg config, code int, ok bool) {
	fs := flag.NewFlagSet("pipeguard-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var workingDirs, allowedServices stringList
	o := &cfg.Agent

	// Flags shared with CSI Proxy.
	fs.StringVar(&o.KubeletPath, "kubelet-path", defaultKubeletPath(), "kubelet root directory; every path must lie inside it or a --working-dir")
	fs.Var(&workingDirs, "working-dir", "further directory paths may lie in (repeatable)")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", "127.0.0.1:8888", `address serving Prometheus /metrics; "0" disables`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", false, "serve /metrics over HTTPS only to callers whose token the API server authenticates and authorizes for get on /metrics (needs --kubeconfig); default true with --kubeconfig=in-cluster, false otherwise (plain HTTP, no authentication: local runs only)")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for --metrics-secure, reloaded when they change; empty: a self-signed certificate made at start")
	fs.StringVar(&o.HealthProbeAddr, "health-probe-bind-address", DefaultHealthProbeAddr, `address serving the plain HTTP probes /readyz and /healthz, for the kubelet; "0" disables`)
	fs.BoolVar(&cfg.windowsService, "windows-service", false, "run as a Windows service")
	fs.BoolVar(&o.RequirePrivacy, "require-privacy", true, "SMB global mappings require encryption (New-SmbGlobalMapping -RequirePrivacy)")

	// pipeguard's own.
	fs.StringVar(&o.SocketDir, "socket-dir", "/run/pipeguard", "directory of the unix sockets standing in for the pipes (not Windows)")
	fs.Var(&allowedServices, "allowed-service", "Windows service that system StartService/StopService may touch (repeatable); none by default")
	fs.StringVar(&o.PipeSDDL, "pipe-sddl", server.DefaultSDDL, "security descriptor (SDDL) of the named pipes (Windows)")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long shutdown waits for in-flight calls")
	fs.StringVar(&cfg.serviceName, "service-name", "pipeguard-agent", "Windows service name, with --windows-service")
	fs.StringVar(&cfg.logFile, "log-file", "", "append the log to this file instead of writing it to stderr (a Windows service has no stderr)")
	hostGroups := []string{"disk", "volume", "smb", "iscsi", "system"}
	timeouts := map[string]*time.Duration{}
	for _, g := range hostGroups {
		timeouts[g] = fs.Duration("host-call-timeout-"+g, app.DefaultLimits[g].Timeout,
			"deadline of each "+g+" host operation (all its Win32 and WMI calls, waiting for a free slot included); past it the call answers DeadlineExceeded. Keep it below the kubelet's 2m operation timeout")
	}
	fs.IntVar(&o.FormatConcurrency, "format-concurrency", app.DefaultFormatConcurrency, "how many volume FormatVolume and ResizeVolume host operations run at once; the others wait for a slot within their deadline")
	fs.Int("powershell-workers", 0, "deprecated, has no effect: the agent starts no PowerShell (its storage, SMB and iSCSI work is WMI calls in its own process); remove it")
	fs.IntVar(&cfg.verbosity, "v", 0, "log verbosity")
	fs.BoolVar(&cfg.showVersion, "version", false, "print the version and exit")

	// Gate and identity.
	fs.StringVar(&cfg.Guard.PolicyDir, "policy-dir", "", "directory of admin agent policies (*.rego in packages below pipeguard.agent.policy), reloaded on change; empty: the shipped rules alone, which allow what passes confinement")
	fs.StringVar(&cfg.Guard.Kubeconfig, "kubeconfig", "", `kubeconfig for the node-scoped pod watch and TokenReview ("in-cluster" for the pod's service account); empty: pods are known by UID only and tokens are not verified`)
	fs.StringVar(&cfg.Guard.NodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name, for the pod watch and token checks (default $NODE_NAME)")
	fs.StringVar(&cfg.Guard.TokenAudience, "token-audience", identity.DefaultTokenAudience, "audience ServiceAccount tokens sent to the agent must be issued for")
	fs.DurationVar(&cfg.Guard.CRITimeout, "cri-timeout", identity.DefaultCRITimeout, "how long the CRI lookups of one caller may take; on timeout its pod fields stay empty")
	fs.StringVar(&cfg.Guard.CRIEndpoint, "cri-endpoint", identity.DefaultCRIEndpoint, `the container runtime's CRI endpoint, through which callers (on Windows every caller) are mapped to their container and pod; "none" or empty disables the mapping`)

	// Audit, after kube-apiserver's flags.
	var maxSizeMB int64
	var level, failure, webhookMode string
	fs.StringVar(&cfg.Guard.Audit.Path, "audit-log-path", defaultAuditLogPath(), `audit log file; rotated files are kept beside it; "-" writes the records to standard output`)
	fs.Int64Var(&maxSizeMB, "audit-log-maxsize", 100, "megabytes after which the audit log is rotated; 0 never rotates")
	fs.IntVar(&cfg.Guard.Audit.MaxBackups, "audit-log-maxbackup", DefaultAuditMaxBackups, "rotated audit files to keep (with the 100 MB default size, about 1 GB of audit log on the node); older ones are removed after a prune checkpoint records them; 0 keeps every file. To keep more, raise it, or send the records off the node with --audit-webhook-config-file")
	fs.StringVar(&level, "audit-level", string(audit.LevelMetadata), "Metadata (who called what, decision, outcome) or Request (also the request body, secrets redacted)")
	fs.StringVar(&failure, "audit-failure", string(guard.FailDeny), "when a record cannot be written: deny the request, or allow it with a loud log and the metric pipeguard_agent_audit_write_failures_total")
	fs.StringVar(&cfg.Guard.AuditAnchor.Namespace, "audit-anchor-namespace", anchor.DefaultNamespace, "namespace of the Lease pipeguard-audit-<node> to which the agent publishes the head of its audit chain, with --kubeconfig and --node-name; must be the namespace whose anchors the policy of config/agent guards, the one it installs to (its DaemonSet passes its own; see docs/audit.md)")
	fs.DurationVar(&cfg.Guard.AuditAnchor.Interval, "audit-anchor-interval", audit.DefaultAnchorInterval, "how often the audit chain head is published; also at every rotation and prune, and at shutdown")
	fs.StringVar(&cfg.Guard.AuditWebhook.ConfigFile, "audit-webhook-config-file", "", "kubeconfig naming a receiver to which every audit record is also POSTed once it is written to the log file, in audit.k8s.io/v1 EventList batches, as kube-apiserver's flag of that name; requests never wait for the receiver")
	fs.StringVar(&webhookMode, "audit-webhook-mode", "batch", "batch: a record the webhook buffer has no room for is dropped from the webhook (the log file keeps it) and the request goes on; blocking: the request is refused at once with Unavailable instead (needs --audit-failure=deny)")
	fs.IntVar(&cfg.Guard.AuditWebhook.BatchMaxSize, "audit-webhook-batch-max-size", audit.DefaultWebhookBatchMaxSize, "records at most in one webhook request")
	fs.IntVar(&cfg.Guard.AuditWebhook.BatchMaxBytes, "audit-webhook-batch-max-bytes", audit.DefaultWebhookBatchMaxBytes, "bytes of records at most in one webhook request (a larger record goes alone); a request the receiver refuses with a 4xx (such as 413) is split down to the records it refuses, each reported on its own")
	fs.DurationVar(&cfg.Guard.AuditWebhook.BatchMaxWait, "audit-webhook-batch-max-wait", audit.DefaultWebhookBatchMaxWait, "how long a record waits for its webhook batch to fill")
	fs.IntVar(&cfg.Guard.AuditWebhook.BufferSize, "audit-webhook-batch-buffer-size", audit.DefaultWebhookBufferSize, "records waiting for the webhook at most; beyond it they are dropped from the webhook (the log file keeps them), counted in pipeguard_agent_audit_webhook_overflow_total and logged")
	fs.Int64Var(&cfg.Guard.AuditWebhook.BufferBytes, "audit-webhook-batch-buffer-bytes", audit.DefaultWebhookBufferBytes, "bytes of records waiting for the webhook or in flight at most; beyond it they are dropped from the webhook as beyond --audit-webhook-batch-buffer-size")
	fs.Int64Var(&cfg.Guard.Audit.MaxUnsentBytes, "audit-webhook-unsent-max-bytes", audit.DefaultMaxUnsentBytes, "bytes of rotated audit files beyond --audit-log-maxbackup kept because they hold records the webhook receiver has not acknowledged; past it they are pruned all the same, with an error log, pipeguard_agent_audit_webhook_unsent_pruned_total and a prune checkpoint listing the records never delivered")
	fs.DurationVar(&cfg.Guard.AuditWebhook.InitialBackoff, "audit-webhook-initial-backoff", audit.DefaultWebhookInitialBackoff, "wait before retrying a failed webhook request (an error, no answer within "+audit.DefaultWebhookRequestTimeout.String()+", or a non-2xx answer); doubles for each retry")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, 0, false
		}
		return cfg, 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pipeguard-agent takes no arguments, got %q\n", fs.Args())
		return cfg, 2, false
	}
	if _, _, err := identity.ParseCRIEndpoint(cfg.Guard.CRIEndpoint); err != nil {
		fmt.Fprintf(stderr, "--cri-endpoint: %v\n", err)
		return cfg, 2, false
	}
	if !explicitFlag(fs, "metrics-secure") {
		o.MetricsSecure = cfg.Guard.Kubeconfig == "in-cluster"
	}
	if metricsOn := o.MetricsBindAddress != "" && o.MetricsBindAddress != "0"; metricsOn && o.MetricsSecure && cfg.Guard.Kubeconfig == "" {
		fmt.Fprintln(stderr, "--metrics-secure needs --kubeconfig: the API server reviews the token of every scrape; set --kubeconfig, or --metrics-secure=false to serve plain HTTP for a local run")
		return cfg, 2, false
	}
	if o.MetricsCertDir != "" && !o.MetricsSecure {
		fmt.Fprintln(stderr, "--metrics-cert-dir is used only with --metrics-secure; add --metrics-secure or drop --metrics-cert-dir")
		return cfg, 2, false
	}
	if err := checkProbeAddress(o.HealthProbeAddr, o.MetricsBindAddress); err != nil {
		fmt.Fprintf(stderr, "--health-probe-bind-address: %v\n", err)
		return cfg, 2, false
	}
	o.HostCallTimeouts = map[string]time.Duration{}
	for _, g := range hostGroups {
		if *timeouts[g] <= 0 {
			fmt.Fprintf(stderr, "--host-call-timeout-%s must be positive, e.g. %v\n", g, app.DefaultLimits[g].Timeout)
			return cfg, 2, false
		}
		o.HostCallTimeouts[g] = *timeouts[g]
	}
	if o.FormatConcurrency <= 0 {
		fmt.Fprintf(stderr, "--format-concurrency must be positive, e.g. %d\n", app.DefaultFormatConcurrency)
		return cfg, 2, false
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "powershell-workers" {
			fmt.Fprintln(stderr, "warning: --powershell-workers is deprecated and has no effect: the agent starts no PowerShell; remove the flag")
		}
	})
	o.WorkingDirs = workingDirs
	o.AllowedServices = allowedServices
	var valid bool
	if cfg.Guard.AuditLevel, valid = audit.ParseLevel(level); !valid {
		fmt.Fprintf(stderr, "--audit-level %q: want Metadata or Request\n", level)
		return cfg, 2, false
	}
	switch cfg.Guard.AuditFailure = guard.FailureMode(failure); cfg.Guard.AuditFailure {
	case guard.FailDeny, guard.FailAllow:
	default:
		fmt.Fprintf(stderr, "--audit-failure %q: want deny or allow\n", failure)
		return cfg, 2, false
	}
	switch webhookMode {
	case "batch":
	case "blocking":
		if cfg.Guard.AuditFailure != guard.FailDeny {
			fmt.Fprintln(stderr, "--audit-webhook-mode blocking refuses requests whose records cannot be queued, which needs --audit-failure=deny")
			return cfg, 2, false
		}
		cfg.Guard.AuditWebhook.Block = true
	default:
		fmt.Fprintf(stderr, "--audit-webhook-mode %q: want batch or blocking\n", webhookMode)
		return cfg, 2, false
	}
	if maxSizeMB < 0 || cfg.Guard.Audit.MaxBackups < 0 {
		fmt.Fprintln(stderr, "--audit-log-maxsize and --audit-log-maxbackup must not be negative")
		return cfg, 2, false
	}
	if cfg.Guard.Audit.Path == audit.StdoutPath {
		if explicitFlag(fs, "audit-log-maxsize") || explicitFlag(fs, "audit-log-maxbackup") {
			fmt.Fprintln(stderr, "--audit-log-path -: standard output is not rotated; drop --audit-log-maxsize and --audit-log-maxbackup")
			return cfg, 2, false
		}
		maxSizeMB, cfg.Guard.Audit.MaxBackups = 0, 0
	}
	if cfg.Guard.AuditWebhook.BatchMaxSize <= 0 || cfg.Guard.AuditWebhook.BatchMaxWait <= 0 || cfg.Guard.AuditWebhook.BufferSize <= 0 || cfg.Guard.AuditWebhook.InitialBackoff <= 0 {
		fmt.Fprintln(stderr, "--audit-webhook-batch-max-size, --audit-webhook-batch-max-wait, --audit-webhook-batch-buffer-size and --audit-webhook-initial-backoff must be positive")
		return cfg, 2, false
	}
	if cfg.Guard.AuditWebhook.BatchMaxBytes <= 0 || cfg.Guard.AuditWebhook.BufferBytes <= 0 || cfg.Guard.Audit.MaxUnsentBytes <= 0 {
		fmt.Fprintf(stderr, "--audit-webhook-batch-max-bytes, --audit-webhook-batch-buffer-bytes and --audit-webhook-unsent-max-bytes must be positive, e.g. %d, %d and %d\n", audit.DefaultWebhookBatchMaxBytes, audit.DefaultWebhookBufferBytes, audit.DefaultMaxUnsentBytes)
		return cfg, 2, false
	}
	if cfg.Guard.AuditAnchor.Interval <= 0 {
		fmt.Fprintln(stderr, "--audit-anchor-interval must be positive, e.g. 10s")
		return cfg, 2, false
	}
	cfg.Guard.Audit.MaxSize = maxSizeMB << 20
	return cfg, 0, true
}

// checkProbeAddress checks the health probe address: "0" or empty
// (disabled), or host:port with a numeric port, not the metrics address.
func checkProbeAddress(addr, metrics string) error {
	if addr == "" || addr == "0" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want host:port, e.g. 127.0.0.1:8889, or 0 to disable the probes", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", addr)
	}
	if addr == metrics {
		return fmt.Errorf("%q is also --metrics-bind-address; give the probes a port of their own", addr)
	}
	return nil
}

// explicitFlag reports whether the command line set the flag name.
func explicitFlag(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
