package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/server"
)

// When the test binary is started with this variable set, it is the agent.
const asAgentEnv = "PIPEGUARD_AGENT_TEST_AS_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(asAgentEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}

func TestParseFlags(t *testing.T) {
	cases := map[string]struct {
		args   []string
		code   int
		ok     bool
		stderr string
		check  func(t *testing.T, c config)
	}{
		"defaults": {args: nil, ok: true, check: func(t *testing.T, c config) {
			if c.Agent.KubeletPath != defaultKubeletPath() || !c.Agent.RequirePrivacy || c.Agent.PipeSDDL != server.DefaultSDDL {
				t.Errorf("defaults: %+v", c.Agent)
			}
		}},
		"version, log file and CRI timeout": {args: []string{"--version", "--log-file", "/l/agent.log", "--cri-timeout", "2s"}, ok: true, check: func(t *testing.T, c config) {
			if !c.showVersion || c.logFile != "/l/agent.log" || c.Guard.CRITimeout != 2*time.Second {
				t.Errorf("parsed version %v, log file %q, CRI timeout %v", c.showVersion, c.logFile, c.Guard.CRITimeout)
			}
		}},
		"repeatable flags": {
			args: []string{"--kubelet-path", "/k", "--working-dir", "/w1", "--working-dir=/w2", "--allowed-service", "csiproxy", "--allowed-service", "smb", "--require-privacy=false", "--socket-dir", "/s"},
			ok:   true,
			check: func(t *testing.T, c config) {
				o := c.Agent
				if o.KubeletPath != "/k" || strings.Join(o.WorkingDirs, ",") != "/w1,/w2" || strings.Join(o.AllowedServices, ",") != "csiproxy,smb" || o.RequirePrivacy || o.SocketDir != "/s" {
					t.Errorf("parsed %+v", o)
				}
			},
		},
		"audit and gate flags": {
			args: []string{"--audit-log-path", "/a/audit.log", "--audit-log-maxsize", "5", "--audit-log-maxbackup", "3", "--audit-level", "Request", "--audit-failure", "allow", "--policy-dir", "/p", "--node-name", "n1"},
			ok:   true,
			check: func(t *testing.T, c config) {
				if c.Guard.Audit.Path != "/a/audit.log" || c.Guard.Audit.MaxSize != 5<<20 || c.Guard.Audit.MaxBackups != 3 || c.Guard.AuditLevel != "Request" || c.Guard.AuditFailure != "allow" || c.Guard.PolicyDir != "/p" || c.Guard.NodeName != "n1" || c.Guard.TokenAudience != "pipeguard-agent" {
					t.Errorf("parsed %+v", c)
				}
			},
		},
		"audit defaults": {args: nil, ok: true, check: func(t *testing.T, c config) {
			if c.Guard.Audit.Path != defaultAuditLogPath() || c.Guard.Audit.MaxSize != 100<<20 || c.Guard.Audit.MaxBackups != 10 || c.Guard.AuditLevel != "Metadata" || c.Guard.AuditFailure != "deny" || c.Guard.PolicyDir != "" {
				t.Errorf("defaults %+v", c)
			}
		}},
		"audit retention can be unbounded": {args: []string{"--audit-log-maxbackup", "0"}, ok: true, check: func(t *testing.T, c config) {
			if c.Guard.Audit.MaxBackups != 0 {
				t.Errorf("--audit-log-maxbackup 0 parsed as %d", c.Guard.Audit.MaxBackups)
			}
		}},
		"audit to standard output keeps no backups": {args: []string{"--audit-log-path", "-"}, ok: true, check: func(t *testing.T, c config) {
			if c.Guard.Audit.MaxBackups != 0 || c.Guard.Audit.MaxSize != 0 {
				t.Errorf("standard output is rotated: %+v", c.Guard.Audit)
			}
		}},
		"webhook mode blocking": {args: []string{"--audit-webhook-mode", "blocking"}, ok: true, check: func(t *testing.T, c config) {
			if !c.Guard.AuditWebhook.Block {
				t.Errorf("--audit-webhook-mode blocking left Block off")
			}
		}},
		"webhook mode default": {args: nil, ok: true, check: func(t *testing.T, c config) {
			if c.Guard.AuditWebhook.Block {
				t.Errorf("blocking mode on by default")
			}
		}},
		"blocking webhook under allow": {args: []string{"--audit-webhook-mode", "blocking", "--audit-failure", "allow"}, code: 2,
			stderr: "--audit-webhook-mode blocking refuses requests whose records cannot be queued, which needs --audit-failure=deny"},
		"bad webhook mode": {args: []string{"--audit-webhook-mode", "blocking-strict"}, code: 2, stderr: `--audit-webhook-mode "blocking-strict": want batch or blocking`},
		"webhook byte bounds by default": {args: nil, ok: true, check: func(t *testing.T, c config) {
			if w := c.Guard.AuditWebhook; w.BatchMaxBytes != 3<<20 || w.BufferBytes != 64<<20 || c.Guard.Audit.MaxUnsentBytes != 1<<30 {
				t.Errorf("batch %d bytes, buffer %d bytes, unsent files %d bytes; want 3 MiB, 64 MiB, 1 GiB", w.BatchMaxBytes, w.BufferBytes, c.Guard.Audit.MaxUnsentBytes)
			}
		}},
		"webhook byte bounds": {args: []string{"--audit-webhook-batch-max-bytes", "1024", "--audit-webhook-batch-buffer-bytes=4096", "--audit-webhook-unsent-max-bytes", "8192"}, ok: true, check: func(t *testing.T, c config) {
			if w := c.Guard.AuditWebhook; w.BatchMaxBytes != 1024 || w.BufferBytes != 4096 || c.Guard.Audit.MaxUnsentBytes != 8192 {
				t.Errorf("batch %d bytes, buffer %d bytes, unsent files %d bytes", w.BatchMaxBytes, w.BufferBytes, c.Guard.Audit.MaxUnsentBytes)
			}
		}},
		"zero webhook unsent bytes": {args: []string{"--audit-webhook-unsent-max-bytes", "0"}, code: 2,
			stderr: "--audit-webhook-batch-max-bytes, --audit-webhook-batch-buffer-bytes and --audit-webhook-unsent-max-bytes must be positive, e.g. 3145728, 67108864 and 1073741824"},
		"health probes by default": {args: nil, ok: true, check: func(t *testing.T, c config) {
			if c.Agent.HealthProbeAddr != "127.0.0.1:8889" {
				t.Errorf("health probe address %q, want 127.0.0.1:8889", c.Agent.HealthProbeAddr)
			}
		}},
		"health probes off": {args: []string{"--health-probe-bind-address=0"}, ok: true, check: func(t *testing.T, c config) {
			if c.Agent.HealthProbeAddr != "0" {
				t.Errorf("health probe address %q, want 0", c.Agent.HealthProbeAddr)
			}
		}},
		"health probe address without a port": {args: []string{"--health-probe-bind-address", "8889"}, code: 2,
			stderr: `--health-probe-bind-address: "8889": want host:port, e.g. 127.0.0.1:8889, or 0 to disable the probes`},
		"health probe port not a number": {args: []string{"--health-probe-bind-address", ":http-alt"}, code: 2,
			stderr: `--health-probe-bind-address: ":http-alt": the port must be a number from 0 to 65535`},
		"health probes on the metrics address": {args: []string{"--health-probe-bind-address", ":8888", "--metrics-bind-address", ":8888"}, code: 2,
			stderr: `--health-probe-bind-address: ":8888" is also --metrics-bind-address`},
		"host call limits by default": {args: nil, ok: true, check: func(t *testing.T, c config) {
			want := map[string]time.Duration{"disk": 90 * time.Second, "volume": 90 * time.Second, "smb": time.Minute, "iscsi": 90 * time.Second, "system": 30 * time.Second}
			if !reflect.DeepEqual(c.Agent.HostCallTimeouts, want) || c.Agent.FormatConcurrency != 2 {
				t.Errorf("host call timeouts %v, format concurrency %d; want %v, 2", c.Agent.HostCallTimeouts, c.Agent.FormatConcurrency, want)
			}
		}},
		"host call limits": {args: []string{"--host-call-timeout-smb", "45s", "--host-call-timeout-system=10s", "--format-concurrency", "4"}, ok: true, check: func(t *testing.T, c config) {
			if got := c.Agent.HostCallTimeouts; got["smb"] != 45*time.Second || got["system"] != 10*time.Second || got["disk"] != 90*time.Second || c.Agent.FormatConcurrency != 4 {
				t.Errorf("host call timeouts %v, format concurrency %d", got, c.Agent.FormatConcurrency)
			}
		}},
		"zero host call timeout":     {args: []string{"--host-call-timeout-volume", "0s"}, code: 2, stderr: "--host-call-timeout-volume must be positive, e.g. 1m30s"},
		"negative host call timeout": {args: []string{"--host-call-timeout-iscsi=-1s"}, code: 2, stderr: "--host-call-timeout-iscsi must be positive"},
		"zero format concurrency":    {args: []string{"--format-concurrency", "0"}, code: 2, stderr: "--format-concurrency must be positive, e.g. 2"},
		"bad audit level":            {args: []string{"--audit-level", "None"}, code: 2, stderr: `--audit-level "None": want Metadata or Request`},
		"bad audit failure":          {args: []string{"--audit-failure", "ignore"}, code: 2, stderr: `--audit-failure "ignore": want deny or allow`},
		"negative maxsize":           {args: []string{"--audit-log-maxsize", "-1"}, code: 2, stderr: "must not be negative"},
		"unknown flag":               {args: []string{"--nope"}, code: 2, stderr: "flag provided but not defined: -nope"},
		"argument":                   {args: []string{"extra"}, code: 2, stderr: `takes no arguments, got ["extra"]`},
		"empty working":              {args: []string{"--working-dir="}, code: 2, stderr: "empty value"},
		"help":                       {args: []string{"-h"}, code: 0, stderr: "-kubelet-path"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			c, code, ok := parseFlags(tc.args, &stderr)
			if ok != tc.ok || code != tc.code {
				t.Fatalf("ok=%v code=%d, want ok=%v code=%d (%s)", ok, code, tc.ok, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.stderr)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func TestBadConfigurationExitsWithTwo(t *testing.T) {
	var stderr bytes.Buffer
	cfg, _, ok := parseFlags([]string{"--kubelet-path", "relative", "--metrics-bind-address", "0", "--audit-log-path", filepath.Join(t.TempDir(), "audit.log")}, &stderr)
	if !ok {
		t.Fatal(stderr.String())
	}
	code := serve(context.Background(), cfg, &stderr, nil)
	if code != 2 || !strings.Contains(stderr.String(), "not absolute") {
		t.Fatalf("code %d, stderr %s", code, stderr.String())
	}
}

// TestContract runs the agent binary as operators and external checks do:
// pipeguard-agent --socket-dir DIR --kubelet-path K serves
// DIR/csi-proxy-filesystem-v1.sock, confines filesystem calls to K, and on
// SIGTERM exits 0 and removes its sockets.
func TestContract(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix sockets and SIGTERM")
	}
	dir := t.TempDir()
	sockets, kubelet := filepath.Join(dir, "sockets"), filepath.Join(dir, "kubelet")
	if err := os.MkdirAll(kubelet, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--socket-dir", sockets, "--kubelet-path", kubelet, "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--audit-log-path", filepath.Join(dir, "audit", "audit.log"))
	cmd.Env = append(os.Environ(), asAgentEnv+"=1")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The agent logs "listening" once every socket is open.
	var stderr strings.Builder
	listening := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), `"msg":"listening"`) {
				close(listening)
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { <-logDone; exited <- cmd.Wait() }()
	select {
	case <-listening:
	case err := <-exited:
		t.Fatalf("agent exited before listening: %v\n%s", err, stderr.String())
	}
	sock := server.SocketPath(sockets, "filesystem", "v1")

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := fsv1.NewFilesystemClient(conn)
	ctx := context.Background()
	if _, err := c.Mkdir(ctx, &fsv1.MkdirRequest{Path: kubelet + "/pods/a"}); err != nil {
		t.Fatalf("Mkdir inside the kubelet path: %v", err)
	}
	_, err = c.Mkdir(ctx, &fsv1.MkdirRequest{Path: dir + "/elsewhere"})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "is outside the allowed roots") {
		t.Fatalf("Mkdir outside: %v", err)
	}
	for _, group := range []string{"disk-v1", "volume-v1", "smb-v1", "system-v1alpha1", "iscsi-v1alpha2", "filesystem-v1beta1"} {
		if _, err := os.Stat(filepath.Join(sockets, "csi-proxy-"+group+".sock")); err != nil {
			t.Errorf("socket for %s: %v", group, err)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("agent exit after SIGTERM: %v\n%s", err, stderr.String())
	}
	if entries, _ := os.ReadDir(sockets); len(entries) != 0 {
		t.Fatalf("sockets left after SIGTERM: %v", entries)
	}
}
