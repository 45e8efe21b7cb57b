package app

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/internal/version"
)

// commandRun is what pipeguard-agent did with a command line, its run
// function replaced by the test's.
type commandRun struct {
	options        *CommandOptions // what run was given; nil: not called
	code           int
	stdout, stderr string
}

// executeCommand runs the real command on args, with a run function that
// keeps the options it is given and returns 0 without serving.
func executeCommand(t *testing.T, args ...string) commandRun {
	t.Helper()
	var r commandRun
	var stdout, stderr bytes.Buffer
	c := NewCommand(context.Background())
	c.Stdout, c.Stderr = &stdout, &stderr
	c.run = func(_ context.Context, o *CommandOptions) int {
		if r.options != nil {
			t.Error("run called twice")
		}
		r.options = o
		return 0
	}
	r.code = c.Execute(args)
	r.stdout, r.stderr = stdout.String(), stderr.String()
	return r
}

// defaultOptions are the options of pipeguard-agent with no arguments
// ($NODE_NAME set to node-env), written out.
func defaultOptions() CommandOptions {
	return CommandOptions{
		Config: Config{
			Agent: Options{
				KubeletPath:        defaultKubeletPath(),
				SocketDir:          "/run/pipeguard",
				PipeSDDL:           server.DefaultSDDL,
				RequirePrivacy:     true,
				MetricsBindAddress: "127.0.0.1:8888",
				HealthProbeAddr:    "127.0.0.1:8889",
				ShutdownTimeout:    30 * time.Second,
				HostCallTimeouts: map[string]time.Duration{
					"disk": 90 * time.Second, "volume": 90 * time.Second, "smb": time.Minute, "iscsi": 90 * time.Second, "system": 30 * time.Second},
				FormatConcurrency: 2,
			},
			Guard: GuardConfig{
				CRIEndpoint:   identity.DefaultCRIEndpoint,
				CRITimeout:    500 * time.Millisecond,
				NodeName:      "node-env",
				TokenAudience: "pipeguard-agent",
				Audit:         audit.Options{Path: defaultAuditLogPath(), MaxSize: 100 << 20, MaxBackups: 10, MaxUnsentBytes: 1 << 30},
				AuditLevel:    audit.LevelMetadata,
				AuditFailure:  "deny",
				AuditAnchor:   AnchorConfig{Namespace: anchor.DefaultNamespace, Interval: 10 * time.Second},
				AuditWebhook: audit.WebhookOptions{
					BatchMaxSize: 400, BatchMaxBytes: 3 << 20, BatchMaxWait: 30 * time.Second,
					BufferSize: 10000, BufferBytes: 64 << 20, InitialBackoff: 10 * time.Second},
			},
		},
		ServiceName: "pipeguard-agent",
	}
}

// TestCommandFlags runs pipeguard-agent's command on each command line,
// its run function replaced, and compares the options run is given with
// the defaults changed as the row says: every flag, given as --flag and
// as -flag, and the settings the command derives.
func TestCommandFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "node-env")
	cases := map[string]struct {
		args   []string
		want   func(o *CommandOptions)
		stderr string // all of stderr
	}{
		"defaults": {want: func(*CommandOptions) {}},

		// Flags shared with CSI Proxy.
		"kubelet path and working dirs": {args: []string{"--kubelet-path", "/k", "--working-dir", "/w1", "-working-dir=/w2"}, want: func(o *CommandOptions) {
			o.Agent.KubeletPath, o.Agent.WorkingDirs = "/k", []string{"/w1", "/w2"}
		}},
		"metrics elsewhere": {args: []string{"--metrics-bind-address=:9000"}, want: func(o *CommandOptions) { o.Agent.MetricsBindAddress = ":9000" }},
		"metrics off":       {args: []string{"-metrics-bind-address", "0"}, want: func(o *CommandOptions) { o.Agent.MetricsBindAddress = "0" }},
		"metrics secure in the cluster by default": {args: []string{"--kubeconfig=in-cluster"}, want: func(o *CommandOptions) {
			o.Guard.Kubeconfig, o.Agent.MetricsSecure = "in-cluster", true
		}},
		"the DaemonSet's metrics flags": {args: []string{"--kubeconfig=in-cluster", "--metrics-bind-address=:8888", "--metrics-secure=true"}, want: func(o *CommandOptions) {
			o.Guard.Kubeconfig, o.Agent.MetricsSecure, o.Agent.MetricsBindAddress = "in-cluster", true, ":8888"
		}},
		"metrics secure turned off in the cluster": {args: []string{"--kubeconfig=in-cluster", "--metrics-secure=false"}, want: func(o *CommandOptions) {
			o.Guard.Kubeconfig = "in-cluster"
		}},
		"a kubeconfig file: metrics plain by default": {args: []string{"--kubeconfig=/etc/agent.kubeconfig"}, want: func(o *CommandOptions) {
			o.Guard.Kubeconfig = "/etc/agent.kubeconfig"
		}},
		"a kubeconfig file: metrics secure on request": {args: []string{"--kubeconfig=/etc/agent.kubeconfig", "-metrics-secure"}, want: func(o *CommandOptions) {
			o.Guard.Kubeconfig, o.Agent.MetricsSecure = "/etc/agent.kubeconfig", true
		}},
		"metrics with a certificate directory": {args: []string{"--kubeconfig=in-cluster", "--metrics-cert-dir=/etc/metrics-cert"}, want: func(o *CommandOptions) {
			o.Guard.Kubeconfig, o.Agent.MetricsSecure, o.Agent.MetricsCertDir = "in-cluster", true, "/etc/metrics-cert"
		}},
		"metrics off need no kubeconfig": {args: []string{"--metrics-secure", "--metrics-bind-address=0"}, want: func(o *CommandOptions) {
			o.Agent.MetricsSecure, o.Agent.MetricsBindAddress = true, "0"
		}},
		"the DaemonSet's probe address": {args: []string{"--health-probe-bind-address=127.0.0.1:8889"}, want: func(*CommandOptions) {}},
		"probes on every interface":     {args: []string{"--health-probe-bind-address", ":8889"}, want: func(o *CommandOptions) { o.Agent.HealthProbeAddr = ":8889" }},
		"probes off":                    {args: []string{"-health-probe-bind-address=0"}, want: func(o *CommandOptions) { o.Agent.HealthProbeAddr = "0" }},
		"Windows service": {args: []string{"--windows-service", "--service-name", "pg"}, want: func(o *CommandOptions) {
			o.WindowsService, o.ServiceName = true, "pg"
		}},
		"SMB privacy off": {args: []string{"--require-privacy=false"}, want: func(o *CommandOptions) { o.Agent.RequirePrivacy = false }},

		// pipeguard's own.
		"sockets, services, pipes and shutdown": {args: []string{"--socket-dir", "/s", "--allowed-service", "csiproxy", "-allowed-service=smb", "--pipe-sddl", "D:P(A;;GA;;;SY)", "--shutdown-timeout", "5s"},
			want: func(o *CommandOptions) {
				o.Agent.SocketDir, o.Agent.AllowedServices, o.Agent.PipeSDDL, o.Agent.ShutdownTimeout = "/s", []string{"csiproxy", "smb"}, "D:P(A;;GA;;;SY)", 5*time.Second
			}},
		"log file and verbosity": {args: []string{"--log-file", "/l/agent.log", "-v", "2"}, want: func(o *CommandOptions) {
			o.LogFile, o.Verbosity = "/l/agent.log", 2
		}},
		"host call limits": {args: []string{"--host-call-timeout-disk=1m", "--host-call-timeout-volume", "80s", "--host-call-timeout-smb", "45s", "-host-call-timeout-iscsi=70s", "--host-call-timeout-system=10s", "--format-concurrency", "4"},
			want: func(o *CommandOptions) {
				o.Agent.HostCallTimeouts = map[string]time.Duration{"disk": time.Minute, "volume": 80 * time.Second, "smb": 45 * time.Second, "iscsi": 70 * time.Second, "system": 10 * time.Second}
				o.Agent.FormatConcurrency = 4
			}},
		"deprecated PowerShell workers": {args: []string{"--powershell-workers", "2"}, want: func(*CommandOptions) {},
			stderr: "warning: --powershell-workers is deprecated and has no effect: the agent starts no PowerShell; remove the flag\n"},
		"deprecated PowerShell workers, zero": {args: []string{"-powershell-workers=0"}, want: func(*CommandOptions) {},
			stderr: "warning: --powershell-workers is deprecated and has no effect: the agent starts no PowerShell; remove the flag\n"},
		"deprecated PowerShell workers, negative": {args: []string{"--powershell-workers=-1"}, want: func(*CommandOptions) {},
			stderr: "warning: --powershell-workers is deprecated and has no effect: the agent starts no PowerShell; remove the flag\n"},

		// Gate and identity.
		"gate and identity": {args: []string{"--policy-dir", "/p", "--node-name", "n1", "--token-audience", "aud", "--cri-timeout", "2s"}, want: func(o *CommandOptions) {
			o.Guard.PolicyDir, o.Guard.NodeName, o.Guard.TokenAudience, o.Guard.CRITimeout = "/p", "n1", "aud", 2*time.Second
		}},
		"no CRI mapping":        {args: []string{"--cri-endpoint=none"}, want: func(o *CommandOptions) { o.Guard.CRIEndpoint = "none" }},
		"no CRI mapping, empty": {args: []string{"--cri-endpoint="}, want: func(o *CommandOptions) { o.Guard.CRIEndpoint = "" }},
		"another CRI socket":    {args: []string{"--cri-endpoint", "unix:///run/crio/crio.sock"}, want: func(o *CommandOptions) { o.Guard.CRIEndpoint = "unix:///run/crio/crio.sock" }},

		// Audit.
		"audit log": {args: []string{"--audit-log-path", "/a/audit.log", "--audit-log-maxsize", "5", "--audit-log-maxbackup", "3", "--audit-level", "Request", "--audit-failure", "allow"},
			want: func(o *CommandOptions) {
				o.Guard.Audit.Path, o.Guard.Audit.MaxSize, o.Guard.Audit.MaxBackups = "/a/audit.log", 5<<20, 3
				o.Guard.AuditLevel, o.Guard.AuditFailure = audit.LevelRequest, "allow"
			}},
		"audit log never rotated, every file kept": {args: []string{"--audit-log-maxsize=0", "--audit-log-maxbackup", "0"}, want: func(o *CommandOptions) {
			o.Guard.Audit.MaxSize, o.Guard.Audit.MaxBackups = 0, 0
		}},
		"audit to standard output keeps no backups": {args: []string{"--audit-log-path", "-"}, want: func(o *CommandOptions) {
			o.Guard.Audit.Path, o.Guard.Audit.MaxSize, o.Guard.Audit.MaxBackups = "-", 0, 0
		}},
		"audit anchor": {args: []string{"--audit-anchor-namespace", "pg-system", "--audit-anchor-interval=1m"}, want: func(o *CommandOptions) {
			o.Guard.AuditAnchor = AnchorConfig{Namespace: "pg-system", Interval: time.Minute}
		}},
		"audit webhook": {args: []string{"--audit-webhook-config-file", "/w.kubeconfig", "--audit-webhook-mode", "batch", "--audit-webhook-batch-max-size", "10", "--audit-webhook-batch-max-wait=2s",
			"--audit-webhook-batch-buffer-size", "20", "--audit-webhook-initial-backoff", "3s"},
			want: func(o *CommandOptions) {
				w := &o.Guard.AuditWebhook
				w.ConfigFile, w.BatchMaxSize, w.BatchMaxWait, w.BufferSize, w.InitialBackoff = "/w.kubeconfig", 10, 2*time.Second, 20, 3*time.Second
			}},
		"audit webhook in blocking mode": {args: []string{"--audit-webhook-mode", "blocking"}, want: func(o *CommandOptions) { o.Guard.AuditWebhook.Block = true }},
		"audit webhook byte bounds": {args: []string{"--audit-webhook-batch-max-bytes", "1024", "--audit-webhook-batch-buffer-bytes=4096", "-audit-webhook-unsent-max-bytes", "8192"},
			want: func(o *CommandOptions) {
				o.Guard.AuditWebhook.BatchMaxBytes, o.Guard.AuditWebhook.BufferBytes, o.Guard.Audit.MaxUnsentBytes = 1024, 4096, 8192
			}},
	}
	covered := map[string]bool{}
	for name, tc := range cases {
		for _, a := range tc.args {
			flagName, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if strings.HasPrefix(a, "-") {
				covered[flagName] = true
			}
		}
		t.Run(name, func(t *testing.T) {
			r := executeCommand(t, tc.args...)
			if r.code != 0 || r.options == nil || r.stdout != "" || r.stderr != tc.stderr {
				t.Fatalf("exit %d, run called: %v, stdout %q, stderr %q; want 0, called, no stdout, stderr %q", r.code, r.options != nil, r.stdout, r.stderr, tc.stderr)
			}
			want := defaultOptions()
			tc.want(&want)
			got := *r.options
			got.raw, got.flags = rawFlags{}, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("options differ from the row's:\n%s", strings.Join(fieldDiff("", reflect.ValueOf(got), reflect.ValueOf(want)), "\n"))
			}
		})
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	new(CommandOptions).AddFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !covered[f.Name] && f.Name != "version" { // --version: TestCommandExits
			t.Errorf("no row gives --%s", f.Name)
		}
	})
}

// fieldDiff lists the fields in which got and want differ.
func fieldDiff(path string, got, want reflect.Value) []string {
	if got.Kind() == reflect.Struct {
		var out []string
		for i := range got.NumField() {
			out = append(out, fieldDiff(path+"."+got.Type().Field(i).Name, got.Field(i), want.Field(i))...)
		}
		return out
	}
	if g, w := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want); g != w {
		return []string{fmt.Sprintf("%s: %s, want %s", path, g, w)}
	}
	return nil
}

// TestCommandExits: what pipeguard-agent says, and its exit code, when it
// does not run the agent, or runs it with a warning; every message is the
// one a user reads, byte for byte.
func TestCommandExits(t *testing.T) {
	cases := map[string]struct {
		args   []string
		code   int
		stdout string
		stderr string // the whole of stderr; with prefix, its start
		prefix bool
	}{
		"version":                       {args: []string{"--version"}, stdout: "pipeguard-agent " + version.Get().String() + "\n"},
		"version, single dash":          {args: []string{"-version"}, stdout: "pipeguard-agent " + version.Get().String() + "\n"},
		"help":                          {args: []string{"-h"}, stderr: "Usage of pipeguard-agent:\n", prefix: true},
		"help, long":                    {args: []string{"--help"}, stderr: "Usage of pipeguard-agent:\n", prefix: true},
		"unknown flag":                  {args: []string{"--nope"}, code: 2, stderr: "flag provided but not defined: -nope\nUsage of pipeguard-agent:\n", prefix: true},
		"argument":                      {args: []string{"extra"}, code: 2, stderr: `pipeguard-agent takes no arguments, got ["extra"]` + "\n"},
		"an empty working dir":          {args: []string{"--working-dir="}, code: 2, stderr: `invalid value "" for flag -working-dir: empty value` + "\n", prefix: true},
		"an empty allowed service":      {args: []string{"--allowed-service", ""}, code: 2, stderr: `invalid value "" for flag -allowed-service: empty value` + "\n", prefix: true},
		"a duration that is not":        {args: []string{"--cri-timeout", "soon"}, code: 2, stderr: `invalid value "soon" for flag -cri-timeout: parse error` + "\n", prefix: true},
		"a CRI endpoint that is a path": {args: []string{"--cri-endpoint=/run/containerd/containerd.sock"}, code: 2, stderr: `--cri-endpoint: CRI endpoint "/run/containerd/containerd.sock": want unix:///path/to/socket or npipe:////./pipe/name, or none to disable` + "\n"},
		"secure metrics, no kubeconfig": {args: []string{"--metrics-secure"}, code: 2, stderr: "--metrics-secure needs --kubeconfig: the API server reviews the token of every scrape; set --kubeconfig, or --metrics-secure=false to serve plain HTTP for a local run\n"},
		"a certificate, plain metrics":  {args: []string{"--metrics-cert-dir=/etc/metrics-cert"}, code: 2, stderr: "--metrics-cert-dir is used only with --metrics-secure; add --metrics-secure or drop --metrics-cert-dir\n"},
		"a certificate, metrics made plain": {args: []string{"--kubeconfig=in-cluster", "--metrics-secure=false", "--metrics-cert-dir=/x"}, code: 2,
			stderr: "--metrics-cert-dir is used only with --metrics-secure; add --metrics-secure or drop --metrics-cert-dir\n"},
		"probe address without a port":    {args: []string{"--health-probe-bind-address", "8889"}, code: 2, stderr: `--health-probe-bind-address: "8889": want host:port, e.g. 127.0.0.1:8889, or 0 to disable the probes` + "\n"},
		"probe port not a number":         {args: []string{"--health-probe-bind-address", ":http-alt"}, code: 2, stderr: `--health-probe-bind-address: ":http-alt": the port must be a number from 0 to 65535` + "\n"},
		"probes on the metrics address":   {args: []string{"--health-probe-bind-address", ":8888", "--metrics-bind-address", ":8888"}, code: 2, stderr: `--health-probe-bind-address: ":8888" is also --metrics-bind-address; give the probes a port of their own` + "\n"},
		"zero host call timeout":          {args: []string{"--host-call-timeout-volume", "0s"}, code: 2, stderr: "--host-call-timeout-volume must be positive, e.g. 1m30s\n"},
		"negative host call timeout":      {args: []string{"--host-call-timeout-iscsi=-1s"}, code: 2, stderr: "--host-call-timeout-iscsi must be positive, e.g. 1m30s\n"},
		"zero system host call timeout":   {args: []string{"--host-call-timeout-system=0"}, code: 2, stderr: "--host-call-timeout-system must be positive, e.g. 30s\n"},
		"zero format concurrency":         {args: []string{"--format-concurrency", "0"}, code: 2, stderr: "--format-concurrency must be positive, e.g. 2\n"},
		"bad audit level":                 {args: []string{"--audit-level", "None"}, code: 2, stderr: `--audit-level "None": want Metadata or Request` + "\n"},
		"bad audit failure":               {args: []string{"--audit-failure", "ignore"}, code: 2, stderr: `--audit-failure "ignore": want deny or allow` + "\n"},
		"bad webhook mode":                {args: []string{"--audit-webhook-mode", "blocking-strict"}, code: 2, stderr: `--audit-webhook-mode "blocking-strict": want batch or blocking` + "\n"},
		"blocking webhook under allow":    {args: []string{"--audit-webhook-mode", "blocking", "--audit-failure", "allow"}, code: 2, stderr: "--audit-webhook-mode blocking refuses requests whose records cannot be queued, which needs --audit-failure=deny\n"},
		"negative audit log size":         {args: []string{"--audit-log-maxsize", "-1"}, code: 2, stderr: "--audit-log-maxsize and --audit-log-maxbackup must not be negative\n"},
		"negative audit backups":          {args: []string{"--audit-log-maxbackup=-1", "--audit-log-path=-"}, code: 2, stderr: "--audit-log-maxsize and --audit-log-maxbackup must not be negative\n"},
		"standard output rotated by size": {args: []string{"--audit-log-path", "-", "--audit-log-maxsize", "100"}, code: 2, stderr: "--audit-log-path -: standard output is not rotated; drop --audit-log-maxsize and --audit-log-maxbackup\n"},
		"standard output with backups":    {args: []string{"--audit-log-path=-", "--audit-log-maxbackup", "10"}, code: 2, stderr: "--audit-log-path -: standard output is not rotated; drop --audit-log-maxsize and --audit-log-maxbackup\n"},
		"zero webhook batch":              {args: []string{"--audit-webhook-batch-max-size", "0"}, code: 2, stderr: "--audit-webhook-batch-max-size, --audit-webhook-batch-max-wait, --audit-webhook-batch-buffer-size and --audit-webhook-initial-backoff must be positive\n"},
		"zero webhook backoff":            {args: []string{"--audit-webhook-initial-backoff", "0s"}, code: 2, stderr: "--audit-webhook-batch-max-size, --audit-webhook-batch-max-wait, --audit-webhook-batch-buffer-size and --audit-webhook-initial-backoff must be positive\n"},
		"zero webhook unsent bytes":       {args: []string{"--audit-webhook-unsent-max-bytes", "0"}, code: 2, stderr: "--audit-webhook-batch-max-bytes, --audit-webhook-batch-buffer-bytes and --audit-webhook-unsent-max-bytes must be positive, e.g. 3145728, 67108864 and 1073741824\n"},
		"zero anchor interval":            {args: []string{"--audit-anchor-interval", "0s"}, code: 2, stderr: "--audit-anchor-interval must be positive, e.g. 10s\n"},
		"version and a deprecated flag": {args: []string{"--version", "--powershell-workers", "3"}, stdout: "pipeguard-agent " + version.Get().String() + "\n",
			stderr: "warning: --powershell-workers is deprecated and has no effect: the agent starts no PowerShell; remove the flag\n"},
		"compare is not a flag": {args: []string{"--compare"}, code: 2, stderr: "flag provided but not defined: -compare\n", prefix: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := executeCommand(t, tc.args...)
			stderrOK := r.stderr == tc.stderr || tc.prefix && strings.HasPrefix(r.stderr, tc.stderr)
			if r.code != tc.code || r.options != nil || r.stdout != tc.stdout || !stderrOK {
				t.Errorf("exit %d, agent run: %v\nstdout %q\nstderr %q\nwant exit %d, no run, stdout %q, stderr %q", r.code, r.options != nil, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestCommandExitCodeIsRuns: once the command line is valid, the exit code
// is the one the agent's run returns.
func TestCommandExitCodeIsRuns(t *testing.T) {
	for _, want := range []int{0, 1, 2} {
		c := NewCommand(context.Background())
		c.Stdout, c.Stderr = &bytes.Buffer{}, &bytes.Buffer{}
		c.run = func(context.Context, *CommandOptions) int { return want }
		if got := c.Execute(nil); got != want {
			t.Errorf("run returned %d, the command %d", want, got)
		}
	}
}

// TestCommandHelpListsEveryFlag: -h lists the flags of AddFlags, sorted,
// each once.
func TestCommandHelpListsEveryFlag(t *testing.T) {
	r := executeCommand(t, "-h")
	var listed []string
	for _, line := range strings.Split(r.stderr, "\n") {
		if name, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ = strings.Cut(name, " ")
			listed = append(listed, name)
		}
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	new(CommandOptions).AddFlags(fs)
	var want []string
	fs.VisitAll(func(f *flag.Flag) { want = append(want, f.Name) })
	if !slices.Equal(listed, want) {
		t.Errorf("-h lists %q, want the flags of AddFlags, %q", listed, want)
	}
}
