package app

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/pipeguard/pipeguard/internal/version"
	"github.com/pipeguard/pipeguard/webhook"
)

// executed is what one run of pipeguard-webhook's command did.
type executed struct {
	// opts are the options its run was given; nil when it did not run.
	opts           *CommandOptions
	code           int
	stdout, stderr string
}

// execute runs pipeguard-webhook's command, with its flags and checks,
// on args; run stands in for serving.
func execute(t *testing.T, run func(context.Context, *CommandOptions) error, args ...string) executed {
	t.Helper()
	var e executed
	c := newCommand(context.Background(), func(ctx context.Context, o *CommandOptions) error {
		e.opts = o
		return run(ctx, o)
	})
	var stdout, stderr bytes.Buffer
	c.stdout, c.stderr = &stdout, &stderr
	e.code = c.Execute(args)
	e.stdout, e.stderr = stdout.String(), stderr.String()
	return e
}

func served(context.Context, *CommandOptions) error { return nil }

// configuration is what the flags configure: the App's options, and what
// the command keeps for itself.
type configuration struct {
	Options    Options
	Kubeconfig string
	Log        logFlags
}

// logFlags is what the zap flags set, in words.
type logFlags struct {
	Development            bool
	Level, StacktraceLevel string // "" when not set
	Encoder                string // the encoder's type; "" when not set
	TimeEncoderSet         bool
}

func levelName(l zapcore.LevelEnabler) string {
	if l == nil {
		return ""
	}
	return fmt.Sprint(l)
}

func configurationOf(o *CommandOptions) configuration {
	c := configuration{Options: o.Options(), Kubeconfig: o.Kubeconfig}
	c.Log = logFlags{
		Development:     o.Zap.Development,
		Level:           levelName(o.Zap.Level),
		StacktraceLevel: levelName(o.Zap.StacktraceLevel),
		TimeEncoderSet:  o.Zap.TimeEncoder != nil,
	}
	if o.Zap.NewEncoder != nil {
		c.Log.Encoder = fmt.Sprintf("%T", o.Zap.NewEncoder())
	}
	return c
}

// defaults is the configuration without flags.
func defaults() configuration {
	return configuration{Options: Options{
		WebhookPort:        9443,
		CertDir:            "/tmp/k8s-webhook-server/serving-certs",
		CertName:           "tls.crt",
		KeyName:            "tls.key",
		MaxReviewsInFlight: webhook.DefaultMaxInFlight,
		MaxConnections:     webhook.DefaultMaxConnections,
		MetricsAddr:        ":8080",
		ProbeAddr:          ":8081",
		DrainDelay:         5 * time.Second,
		DecisionCacheSize:  DefaultDecisionCacheSize,
		DecisionCacheBytes: DefaultDecisionCacheBytes,
		WebhookConfigName:  "pipeguard",
		AdminRuleTimeout:   DefaultAdminRuleTimeout,
		AuditInterval:      60 * time.Second,
	}}
}

// TestFlags: every flag of pipeguard-webhook, through the real command,
// and the configuration it ends in, or the exit code and the message
// that refuses it. Each flag has a row of its name.
func TestFlags(t *testing.T) {
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, newTestCA(t, "api server client CA").pem, 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	rotation := func(c *configuration) *CertRotation {
		c.Options.CertRotation = &CertRotation{SecretName: "pipeguard-webhook-cert", ServiceName: "pipeguard-webhook", WebhookConfigName: "pipeguard"}
		return c.Options.CertRotation
	}
	tests := map[string]struct {
		args []string
		// want changes the defaults into the configuration the flags
		// give; nil when the command must not run.
		want func(*configuration)
		// code and stderr are the exit code and what the command prints
		// on stderr (only its first line, for usage).
		code   int
		stderr string
	}{
		"no flags": {nil, func(*configuration) {}, 0, ""},

		"--webhook-host":                              {[]string{"--webhook-host", "127.0.0.1"}, func(c *configuration) { c.Options.WebhookHost = "127.0.0.1" }, 0, ""},
		"--webhook-port":                              {[]string{"--webhook-port", "10443"}, func(c *configuration) { c.Options.WebhookPort = 10443 }, 0, ""},
		"--webhook-cert-path":                         {[]string{"--webhook-cert-path", "/certs"}, func(c *configuration) { c.Options.CertDir = "/certs" }, 0, ""},
		"--webhook-cert-name":                         {[]string{"--webhook-cert-name", "serving.crt"}, func(c *configuration) { c.Options.CertName = "serving.crt" }, 0, ""},
		"--webhook-cert-key":                          {[]string{"--webhook-cert-key", "serving.key"}, func(c *configuration) { c.Options.KeyName = "serving.key" }, 0, ""},
		"--metrics-bind-address":                      {[]string{"--metrics-bind-address", "0"}, func(c *configuration) { c.Options.MetricsAddr = "0" }, 0, ""},
		"--metrics-secure":                            {[]string{"--metrics-secure"}, func(c *configuration) { c.Options.MetricsSecure = true }, 0, ""},
		"--health-probe-bind-address":                 {[]string{"--health-probe-bind-address", "127.0.0.1:9000"}, func(c *configuration) { c.Options.ProbeAddr = "127.0.0.1:9000" }, 0, ""},
		"--leader-elect":                              {[]string{"--leader-elect"}, func(c *configuration) { c.Options.LeaderElect = true }, 0, ""},
		"--leader-election-namespace":                 {[]string{"--leader-election-namespace", "pipeguard-system"}, func(c *configuration) { c.Options.LeaderElectionNamespace = "pipeguard-system" }, 0, ""},
		"--drain-delay":                               {[]string{"--drain-delay", "0s"}, func(c *configuration) { c.Options.DrainDelay = 0 }, 0, ""},
		"--max-concurrent-evaluations":                {[]string{"--max-concurrent-evaluations", "3"}, func(c *configuration) { c.Options.MaxConcurrentEvaluations = 3 }, 0, ""},
		"--decision-cache-size":                       {[]string{"--decision-cache-size", "10"}, func(c *configuration) { c.Options.DecisionCacheSize = 10 }, 0, ""},
		"--decision-cache-size 0 turns the cache off": {[]string{"--decision-cache-size", "0"}, func(c *configuration) { c.Options.DecisionCacheSize = 0 }, 0, ""},
		"--decision-cache-bytes":                      {[]string{"--decision-cache-bytes", "4096"}, func(c *configuration) { c.Options.DecisionCacheBytes = 4096 }, 0, ""},
		"--decision-cache-bytes 0 turns the cache off": {[]string{"--decision-cache-bytes", "0", "--decision-cache-size", "10"}, func(c *configuration) {
			c.Options.DecisionCacheSize, c.Options.DecisionCacheBytes = 0, 0
		}, 0, ""},
		"--decision-cache-bytes negative": {[]string{"--decision-cache-bytes", "-1"}, nil, 2,
			fmt.Sprintf("pipeguard-webhook: --decision-cache-bytes -1: want a number of bytes (default %d), or 0 to turn the decision cache off", DefaultDecisionCacheBytes)},
		"--admin-rule-timeout": {[]string{"--admin-rule-timeout", "2s"}, func(c *configuration) { c.Options.AdminRuleTimeout = 2 * time.Second }, 0, ""},
		"--audit-interval":     {[]string{"--audit-interval", "5m"}, func(c *configuration) { c.Options.AuditInterval = 5 * time.Minute }, 0, ""},
		"--client-ca-file":     {[]string{"--client-ca-file", caFile}, func(c *configuration) { c.Options.ClientCAFile = caFile }, 0, ""},
		"--client-ca-file that is missing": {[]string{"--client-ca-file", missing}, nil, 2,
			"pipeguard-webhook: --client-ca-file: client CA bundle: stat " + missing + ": no such file or directory; give the file of the CA that signs the API server's webhook client certificate"},
		"--client-ca-file without a certificate": {[]string{"--client-ca-file", notPEM}, nil, 2,
			"pipeguard-webhook: --client-ca-file: client CA bundle " + notPEM + " holds no PEM certificate; give the PEM file of the CA that signs the API server's webhook client certificate"},
		"--max-reviews-in-flight": {[]string{"--max-reviews-in-flight", "16"}, func(c *configuration) { c.Options.MaxReviewsInFlight = 16 }, 0, ""},
		"--max-reviews-in-flight 0": {[]string{"--max-reviews-in-flight", "0"}, nil, 2,
			fmt.Sprintf("pipeguard-webhook: --max-reviews-in-flight 0: want at least 1 (default %d)", webhook.DefaultMaxInFlight)},
		"--max-connections": {[]string{"--max-connections", "512"}, func(c *configuration) { c.Options.MaxConnections = 512 }, 0, ""},
		"--max-connections -1": {[]string{"--max-connections", "-1"}, nil, 2,
			fmt.Sprintf("pipeguard-webhook: --max-connections -1: want at least 1 (default %d)", webhook.DefaultMaxConnections)},
		"the first flag refused is the one named": {[]string{"--decision-cache-bytes", "-1", "--max-connections", "0"}, nil, 2,
			fmt.Sprintf("pipeguard-webhook: --max-connections 0: want at least 1 (default %d)", webhook.DefaultMaxConnections)},
		"--kubeconfig": {[]string{"--kubeconfig", "/etc/kubeconfig"}, func(c *configuration) { c.Kubeconfig = "/etc/kubeconfig" }, 0, ""},

		"--cert-rotation":    {[]string{"--cert-rotation"}, func(c *configuration) { rotation(c) }, 0, ""},
		"--cert-secret-name": {[]string{"--cert-rotation", "--cert-secret-name", "cert"}, func(c *configuration) { rotation(c).SecretName = "cert" }, 0, ""},
		"--namespace":        {[]string{"--cert-rotation", "--namespace", "pipeguard-system"}, func(c *configuration) { rotation(c).Namespace = "pipeguard-system" }, 0, ""},
		"--service-name":     {[]string{"--cert-rotation", "--service-name", "svc"}, func(c *configuration) { rotation(c).ServiceName = "svc" }, 0, ""},
		"--cert-rotation with its names": {[]string{"--cert-rotation", "--cert-secret-name", "cert", "--namespace", "pipeguard-system", "--service-name", "svc", "--webhook-config-name", "vwc"}, func(c *configuration) {
			c.Options.CertRotation = &CertRotation{SecretName: "cert", Namespace: "pipeguard-system", ServiceName: "svc", WebhookConfigName: "vwc"}
			c.Options.WebhookConfigName = "vwc"
		}, 0, ""},
		"the certificate's names without --cert-rotation":      {[]string{"--cert-secret-name", "cert", "--namespace", "pipeguard-system", "--service-name", "svc"}, func(*configuration) {}, 0, ""},
		"--webhook-config-name":                                {[]string{"--webhook-config-name", "vwc"}, func(c *configuration) { c.Options.WebhookConfigName = "vwc" }, 0, ""},
		"--webhook-config-name empty leaves the entries alone": {[]string{"--webhook-config-name", ""}, func(c *configuration) { c.Options.WebhookConfigName = "" }, 0, ""},

		"--zap-devel":            {[]string{"--zap-devel"}, func(c *configuration) { c.Log.Development = true }, 0, ""},
		"--zap-log-level":        {[]string{"--zap-log-level", "debug"}, func(c *configuration) { c.Log.Level = "debug" }, 0, ""},
		"--zap-log-level 3":      {[]string{"--zap-log-level", "3"}, func(c *configuration) { c.Log.Level = "Level(-3)" }, 0, ""},
		"--zap-stacktrace-level": {[]string{"--zap-stacktrace-level", "panic"}, func(c *configuration) { c.Log.StacktraceLevel = "panic" }, 0, ""},
		"--zap-encoder":          {[]string{"--zap-encoder", "console"}, func(c *configuration) { c.Log.Encoder = "zapcore.consoleEncoder" }, 0, ""},
		"--zap-time-encoding":    {[]string{"--zap-time-encoding", "iso8601"}, func(c *configuration) { c.Log.TimeEncoderSet = true }, 0, ""},
		"--zap-log-level unknown": {[]string{"--zap-log-level", "loud"}, nil, 2,
			`invalid value "loud" for flag -zap-log-level: invalid log level "loud"`},

		"one dash":                       {[]string{"-webhook-port", "10443", "-leader-elect"}, func(c *configuration) { c.Options.WebhookPort, c.Options.LeaderElect = 10443, true }, 0, ""},
		"flag=value":                     {[]string{"--webhook-port=10443", "-drain-delay=1s"}, func(c *configuration) { c.Options.WebhookPort, c.Options.DrainDelay = 10443, time.Second }, 0, ""},
		"arguments after the flags":      {[]string{"--leader-elect", "serve", "--webhook-port", "1"}, func(c *configuration) { c.Options.LeaderElect = true }, 0, ""},
		"a flag that is not one":         {[]string{"--webhook-portt", "1"}, nil, 2, "flag provided but not defined: -webhook-portt"},
		"a value that is not a number":   {[]string{"--webhook-port", "https"}, nil, 2, `invalid value "https" for flag -webhook-port: parse error`},
		"a value that is not a duration": {[]string{"--drain-delay", "5"}, nil, 2, `invalid value "5" for flag -drain-delay: parse error`},
		"-h":                             {[]string{"-h"}, nil, 0, "Usage of pipeguard-webhook:"},
		"--help":                         {[]string{"--help", "--max-connections", "0"}, nil, 0, "Usage of pipeguard-webhook:"},
		"--version":                      {[]string{"--version"}, nil, 0, ""},
		"--version checks the flags first": {[]string{"--version", "--max-reviews-in-flight", "0"}, nil, 2,
			fmt.Sprintf("pipeguard-webhook: --max-reviews-in-flight 0: want at least 1 (default %d)", webhook.DefaultMaxInFlight)},
	}
	var fs flag.FlagSet
	(&CommandOptions{}).AddFlags(&fs)
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := tests["--"+f.Name]; !ok {
			t.Errorf("no row %q tests the flag --%s", "--"+f.Name, f.Name)
		}
	})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := execute(t, served, tc.args...)
			if e.code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", e.code, tc.code, e.stderr)
			}
			stderr := strings.TrimSuffix(e.stderr, "\n")
			if strings.HasPrefix(tc.stderr, "Usage of ") || (tc.code == 2 && !strings.HasPrefix(tc.stderr, "pipeguard-webhook: ")) {
				// The flag package's own messages come with the usage.
				stderr, _, _ = strings.Cut(stderr, "\n")
			}
			if stderr != tc.stderr {
				t.Errorf("stderr %q\nwant   %q", stderr, tc.stderr)
			}
			wantStdout := ""
			if tc.code == 0 && tc.want == nil && tc.stderr == "" {
				wantStdout = "pipeguard-webhook " + version.Get().String() + "\n"
			}
			if e.stdout != wantStdout {
				t.Errorf("stdout %q, want %q", e.stdout, wantStdout)
			}
			if tc.want == nil {
				if e.opts != nil {
					t.Errorf("the command ran, with %+v", configurationOf(e.opts))
				}
				return
			}
			if e.opts == nil {
				t.Fatal("the command did not run")
			}
			want := defaults()
			tc.want(&want)
			if got := configurationOf(e.opts); !reflect.DeepEqual(got, want) {
				t.Errorf("configuration\n%+v\nwant\n%+v", got, want)
				if got.Options.CertRotation != nil || want.Options.CertRotation != nil {
					t.Errorf("certificate rotation %+v, want %+v", got.Options.CertRotation, want.Options.CertRotation)
				}
			}
		})
	}
}

// TestUsage: -h prints every flag with its default, as the flag package
// does, and the zap flags with them.
func TestUsage(t *testing.T) {
	e := execute(t, served, "-h")
	for _, want := range []string{
		"Usage of pipeguard-webhook:\n",
		"  -webhook-port int\n    \tport of the webhook server (TLS) (default 9443)\n",
		fmt.Sprintf("  -max-reviews-in-flight int\n    \treviews read and decided at once; more wait for a slot until their deadline, then get an internal error; each takes 25 to 40 MiB at the bounds of a review (3 MiB), so the default keeps a flood under half the Deployment's 512Mi (default %d)\n", webhook.DefaultMaxInFlight),
		"  -version\n    \tprint the version and exit\n",
		"  -zap-log-level value\n",
	} {
		if !strings.Contains(e.stderr, want) {
			t.Errorf("usage has no %q:\n%s", want, e.stderr)
		}
	}
}

// TestRunFailures: what the run returns sets the exit code, and its
// message reaches stderr unless the log has it.
func TestRunFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		code   int
		stderr string
	}{
		"served":                    {nil, 0, ""},
		"a failure":                 {errors.New("no API server configuration"), 1, "pipeguard-webhook: no API server configuration\n"},
		"a flag found wrong at run": {badFlag(errors.New("--namespace: not running in a pod")), 2, "pipeguard-webhook: --namespace: not running in a pod\n"},
		"a failure logged":          {logged(errors.New("cannot start")), 1, ""},
		"a failure logged, wrapped": {fmt.Errorf("serving: %w", logged(errors.New("stopped"))), 1, ""},
	} {
		t.Run(name, func(t *testing.T) {
			e := execute(t, func(context.Context, *CommandOptions) error { return tc.err })
			if e.code != tc.code || e.stderr != tc.stderr {
				t.Errorf("exit code %d, stderr %q; want %d, %q", e.code, e.stderr, tc.code, tc.stderr)
			}
		})
	}
}
