package app

import (
	"errors"
	"flag"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
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

// CommandOptions is pipeguard-agent's command line: the Config the agent
// runs with, and how the command runs it. AddFlags binds it to the flags;
// once they are parsed, Validate checks them and Complete derives the
// settings no single flag gives (see command.go for the order).
type CommandOptions struct {
	Config
	// Verbosity is the log's verbosity (-v).
	Verbosity int
	// WindowsService runs the agent under the Windows service control
	// manager, as the service ServiceName.
	WindowsService bool
	ServiceName    string
	// LogFile, when set, is the file the log is appended to instead of
	// stderr.
	LogFile string
	// ShowVersion prints the version instead of running the agent.
	ShowVersion bool

	// raw are the flags Complete turns into fields of Config.
	raw rawFlags
	// flags is the set AddFlags added the flags to, which tells Validate
	// and Complete which of them the command line set.
	flags *flag.FlagSet
}

// rawFlags are the flag values that are not a field of Config as given.
type rawFlags struct {
	hostCallTimeouts  map[string]*time.Duration // by group
	auditLogMaxSizeMB int64
	auditLevel        string
	auditFailure      string
	auditWebhookMode  string
}

// hostCallGroups are the groups of the flags --host-call-timeout-<group>.
func hostCallGroups() []string { return []string{"disk", "volume", "smb", "iscsi", "system"} }

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

// AddFlags adds the flags of pipeguard-agent to fs, bound to o, with their
// defaults.
func (o *CommandOptions) AddFlags(fs *flag.FlagSet) {
	o.flags = fs
	o.addCSIProxyFlags(fs)
	o.addCommandFlags(fs)
	o.addHostCallFlags(fs)
	o.addGateFlags(fs)
	o.addAuditFlags(fs)
	o.addAuditWebhookFlags(fs)
}

// addCSIProxyFlags adds the flags pipeguard-agent shares with CSI Proxy.
func (o *CommandOptions) addCSIProxyFlags(fs *flag.FlagSet) {
	a := &o.Agent
	fs.StringVar(&a.KubeletPath, "kubelet-path", defaultKubeletPath(), "kubelet root directory; every path must lie inside it or a --working-dir")
	fs.Var((*stringList)(&a.WorkingDirs), "working-dir", "further directory paths may lie in (repeatable)")
	fs.StringVar(&a.MetricsBindAddress, "metrics-bind-address", "127.0.0.1:8888", `address serving Prometheus /metrics; "0" disables`)
	fs.BoolVar(&a.MetricsSecure, "metrics-secure", false, "serve /metrics over HTTPS only to callers whose token the API server authenticates and authorizes for get on /metrics (needs --kubeconfig); default true with --kubeconfig=in-cluster, false otherwise (plain HTTP, no authentication: local runs only)")
	fs.StringVar(&a.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for --metrics-secure, reloaded when they change; empty: a self-signed certificate made at start")
	fs.StringVar(&a.HealthProbeAddr, "health-probe-bind-address", DefaultHealthProbeAddr, `address serving the plain HTTP probes /readyz and /healthz, for the kubelet; "0" disables`)
	fs.BoolVar(&o.WindowsService, "windows-service", false, "run as a Windows service")
	fs.BoolVar(&a.RequirePrivacy, "require-privacy", true, "SMB global mappings require encryption (New-SmbGlobalMapping -RequirePrivacy)")
}

// addCommandFlags adds pipeguard-agent's own flags of the servers and of
// the command: where it listens, its log, its version.
func (o *CommandOptions) addCommandFlags(fs *flag.FlagSet) {
	a := &o.Agent
	fs.StringVar(&a.SocketDir, "socket-dir", "/run/pipeguard", "directory of the unix sockets standing in for the pipes (not Windows)")
	fs.Var((*stringList)(&a.AllowedServices), "allowed-service", "Windows service that system StartService/StopService may touch (repeatable); none by default")
	fs.StringVar(&a.PipeSDDL, "pipe-sddl", server.DefaultSDDL, "security descriptor (SDDL) of the named pipes (Windows)")
	fs.DurationVar(&a.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long shutdown waits for in-flight calls")
	fs.StringVar(&o.ServiceName, "service-name", "pipeguard-agent", "Windows service name, with --windows-service")
	fs.StringVar(&o.LogFile, "log-file", "", "append the log to this file instead of writing it to stderr (a Windows service has no stderr)")
	fs.IntVar(&o.Verbosity, "v", 0, "log verbosity")
	fs.BoolVar(&o.ShowVersion, "version", false, "print the version and exit")
}

// addHostCallFlags adds the bounds of the Windows groups' host calls.
func (o *CommandOptions) addHostCallFlags(fs *flag.FlagSet) {
	o.raw.hostCallTimeouts = map[string]*time.Duration{}
	for _, g := range hostCallGroups() {
		o.raw.hostCallTimeouts[g] = fs.Duration("host-call-timeout-"+g, DefaultLimits[g].Timeout,
			"deadline of each "+g+" host operation (all its Win32 and WMI calls, waiting for a free slot included); past it the call answers DeadlineExceeded. Keep it below the kubelet's 2m operation timeout")
	}
	fs.IntVar(&o.Agent.FormatConcurrency, "format-concurrency", DefaultFormatConcurrency, "how many volume FormatVolume and ResizeVolume host operations run at once; the others wait for a slot within their deadline")
	fs.Int("powershell-workers", 0, "deprecated, has no effect: the agent starts no PowerShell (its storage, SMB and iSCSI work is WMI calls in its own process); remove it")
}

// addGateFlags adds the flags of the gate and of the callers' identity.
func (o *CommandOptions) addGateFlags(fs *flag.FlagSet) {
	g := &o.Guard
	fs.StringVar(&g.PolicyDir, "policy-dir", "", "directory of admin agent policies (*.rego in packages below pipeguard.agent.policy), reloaded on change; empty: the shipped rules alone, which allow what passes confinement")
	fs.StringVar(&g.Kubeconfig, "kubeconfig", "", `kubeconfig for the node-scoped pod watch and TokenReview ("in-cluster" for the pod's service account); empty: pods are known by UID only and tokens are not verified`)
	fs.StringVar(&g.NodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name, for the pod watch and token checks (default $NODE_NAME)")
	fs.StringVar(&g.TokenAudience, "token-audience", identity.DefaultTokenAudience, "audience ServiceAccount tokens sent to the agent must be issued for")
	fs.DurationVar(&g.CRITimeout, "cri-timeout", identity.DefaultCRITimeout, "how long the CRI lookups of one caller may take; on timeout its pod fields stay empty")
	fs.StringVar(&g.CRIEndpoint, "cri-endpoint", identity.DefaultCRIEndpoint, `the container runtime's CRI endpoint, through which callers (on Windows every caller) are mapped to their container and pod; "none" or empty disables the mapping`)
}

// addAuditFlags adds the flags of the audit log and its anchor, after
// kube-apiserver's flags.
func (o *CommandOptions) addAuditFlags(fs *flag.FlagSet) {
	g := &o.Guard
	fs.StringVar(&g.Audit.Path, "audit-log-path", defaultAuditLogPath(), `audit log file; rotated files are kept beside it; "-" writes the records to standard output`)
	fs.Int64Var(&o.raw.auditLogMaxSizeMB, "audit-log-maxsize", 100, "megabytes after which the audit log is rotated; 0 never rotates")
	fs.IntVar(&g.Audit.MaxBackups, "audit-log-maxbackup", DefaultAuditMaxBackups, "rotated audit files to keep (with the 100 MB default size, about 1 GB of audit log on the node); older ones are removed after a prune checkpoint records them; 0 keeps every file. To keep more, raise it, or send the records off the node with --audit-webhook-config-file")
	fs.StringVar(&o.raw.auditLevel, "audit-level", string(audit.LevelMetadata), "Metadata (who called what, decision, outcome) or Request (also the request body, secrets redacted)")
	fs.StringVar(&o.raw.auditFailure, "audit-failure", string(guard.FailDeny), "when a record cannot be written: deny the request, or allow it with a loud log and the metric pipeguard_agent_audit_write_failures_total")
	fs.StringVar(&g.AuditAnchor.Namespace, "audit-anchor-namespace", anchor.DefaultNamespace, "namespace of the Lease pipeguard-audit-<node> to which the agent publishes the head of its audit chain, with --kubeconfig and --node-name; must be the namespace whose anchors the policy of config/agent guards, the one it installs to (its DaemonSet passes its own; see docs/audit.md)")
	fs.DurationVar(&g.AuditAnchor.Interval, "audit-anchor-interval", audit.DefaultAnchorInterval, "how often the audit chain head is published; also at every rotation and prune, and at shutdown")
}

// addAuditWebhookFlags adds the flags of the audit webhook, after
// kube-apiserver's flags.
func (o *CommandOptions) addAuditWebhookFlags(fs *flag.FlagSet) {
	w := &o.Guard.AuditWebhook
	fs.StringVar(&w.ConfigFile, "audit-webhook-config-file", "", "kubeconfig naming a receiver to which every audit record is also POSTed once it is written to the log file, in audit.k8s.io/v1 EventList batches, as kube-apiserver's flag of that name; requests never wait for the receiver")
	fs.StringVar(&o.raw.auditWebhookMode, "audit-webhook-mode", "batch", "batch: a record the webhook buffer has no room for is dropped from the webhook (the log file keeps it) and the request goes on; blocking: the request is refused at once with Unavailable instead (needs --audit-failure=deny)")
	fs.IntVar(&w.BatchMaxSize, "audit-webhook-batch-max-size", audit.DefaultWebhookBatchMaxSize, "records at most in one webhook request")
	fs.IntVar(&w.BatchMaxBytes, "audit-webhook-batch-max-bytes", audit.DefaultWebhookBatchMaxBytes, "bytes of records at most in one webhook request (a larger record goes alone); a request the receiver refuses with a 4xx (such as 413) is split down to the records it refuses, each reported on its own")
	fs.DurationVar(&w.BatchMaxWait, "audit-webhook-batch-max-wait", audit.DefaultWebhookBatchMaxWait, "how long a record waits for its webhook batch to fill")
	fs.IntVar(&w.BufferSize, "audit-webhook-batch-buffer-size", audit.DefaultWebhookBufferSize, "records waiting for the webhook at most; beyond it they are dropped from the webhook (the log file keeps them), counted in pipeguard_agent_audit_webhook_overflow_total and logged")
	fs.Int64Var(&w.BufferBytes, "audit-webhook-batch-buffer-bytes", audit.DefaultWebhookBufferBytes, "bytes of records waiting for the webhook or in flight at most; beyond it they are dropped from the webhook as beyond --audit-webhook-batch-buffer-size")
	fs.Int64Var(&o.Guard.Audit.MaxUnsentBytes, "audit-webhook-unsent-max-bytes", audit.DefaultMaxUnsentBytes, "bytes of rotated audit files beyond --audit-log-maxbackup kept because they hold records the webhook receiver has not acknowledged; past it they are pruned all the same, with an error log, pipeguard_agent_audit_webhook_unsent_pruned_total and a prune checkpoint listing the records never delivered")
	fs.DurationVar(&w.InitialBackoff, "audit-webhook-initial-backoff", audit.DefaultWebhookInitialBackoff, "wait before retrying a failed webhook request (an error, no answer within "+audit.DefaultWebhookRequestTimeout.String()+", or a non-2xx answer); doubles for each retry")
}

// Complete sets the fields of Config that follow from the flags once
// Validate has accepted them: --metrics-secure's default, the host call
// timeouts, the audit level, failure mode and webhook mode, and the audit
// log's rotation size in bytes (none for standard output).
func (o *CommandOptions) Complete() {
	o.Agent.MetricsSecure = o.metricsSecure()
	o.Agent.HostCallTimeouts = map[string]time.Duration{}
	for g, d := range o.raw.hostCallTimeouts {
		o.Agent.HostCallTimeouts[g] = *d
	}
	o.Guard.AuditLevel, _ = audit.ParseLevel(o.raw.auditLevel)
	o.Guard.AuditFailure = guard.FailureMode(o.raw.auditFailure)
	o.Guard.AuditWebhook.Block = o.raw.auditWebhookMode == "blocking"
	maxSizeMB := o.raw.auditLogMaxSizeMB
	if o.Guard.Audit.Path == audit.StdoutPath {
		maxSizeMB, o.Guard.Audit.MaxBackups = 0, 0
	}
	o.Guard.Audit.MaxSize = maxSizeMB << 20
}

// metricsSecure is --metrics-secure as given, else its default: true with
// --kubeconfig=in-cluster.
func (o *CommandOptions) metricsSecure() bool {
	if o.set("metrics-secure") {
		return o.Agent.MetricsSecure
	}
	return o.Guard.Kubeconfig == "in-cluster"
}

// set reports whether the command line set the flag name.
func (o *CommandOptions) set(name string) bool {
	set := false
	if o.flags != nil {
		o.flags.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	}
	return set
}
