package app

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// Validate checks the flags AddFlags bound, in the order below, and
// returns the first problem as the message the user reads, naming the
// flags to change.
func (o *CommandOptions) Validate() error {
	for _, check := range []func() error{
		o.checkCRIEndpoint,
		o.checkMetrics,
		o.checkProbes,
		o.checkHostCalls,
		o.checkAuditRecords,
		o.checkAuditRotation,
		o.checkAuditWebhook,
		o.checkAuditAnchor,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (o *CommandOptions) checkCRIEndpoint() error {
	if _, _, err := identity.ParseCRIEndpoint(o.Guard.CRIEndpoint); err != nil {
		return fmt.Errorf("--cri-endpoint: %w", err)
	}
	return nil
}

// checkMetrics: a secure /metrics reviews tokens through --kubeconfig, and
// only a secure one has a certificate.
func (o *CommandOptions) checkMetrics() error {
	a, secure := o.Agent, o.metricsSecure()
	if metricsOn := a.MetricsBindAddress != "" && a.MetricsBindAddress != "0"; metricsOn && secure && o.Guard.Kubeconfig == "" {
		return errors.New("--metrics-secure needs --kubeconfig: the API server reviews the token of every scrape; set --kubeconfig, or --metrics-secure=false to serve plain HTTP for a local run")
	}
	if a.MetricsCertDir != "" && !secure {
		return errors.New("--metrics-cert-dir is used only with --metrics-secure; add --metrics-secure or drop --metrics-cert-dir")
	}
	return nil
}

func (o *CommandOptions) checkProbes() error {
	if err := checkProbeAddress(o.Agent.HealthProbeAddr, o.Agent.MetricsBindAddress); err != nil {
		return fmt.Errorf("--health-probe-bind-address: %w", err)
	}
	return nil
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

func (o *CommandOptions) checkHostCalls() error {
	for _, g := range hostCallGroups() {
		if *o.raw.hostCallTimeouts[g] <= 0 {
			return fmt.Errorf("--host-call-timeout-%s must be positive, e.g. %v", g, DefaultLimits[g].Timeout)
		}
	}
	if o.Agent.FormatConcurrency <= 0 {
		return fmt.Errorf("--format-concurrency must be positive, e.g. %d", DefaultFormatConcurrency)
	}
	return nil
}

// checkAuditRecords checks what is recorded, and what a record that
// cannot be written or queued does to its request.
func (o *CommandOptions) checkAuditRecords() error {
	r := o.raw
	if _, valid := audit.ParseLevel(r.auditLevel); !valid {
		return fmt.Errorf("--audit-level %q: want Metadata or Request", r.auditLevel)
	}
	switch guard.FailureMode(r.auditFailure) {
	case guard.FailDeny, guard.FailAllow:
	default:
		return fmt.Errorf("--audit-failure %q: want deny or allow", r.auditFailure)
	}
	switch r.auditWebhookMode {
	case "batch":
	case "blocking":
		if guard.FailureMode(r.auditFailure) != guard.FailDeny {
			return errors.New("--audit-webhook-mode blocking refuses requests whose records cannot be queued, which needs --audit-failure=deny")
		}
	default:
		return fmt.Errorf("--audit-webhook-mode %q: want batch or blocking", r.auditWebhookMode)
	}
	return nil
}

// checkAuditRotation: sizes are not negative, and standard output is not
// rotated.
func (o *CommandOptions) checkAuditRotation() error {
	if o.raw.auditLogMaxSizeMB < 0 || o.Guard.Audit.MaxBackups < 0 {
		return errors.New("--audit-log-maxsize and --audit-log-maxbackup must not be negative")
	}
	if o.Guard.Audit.Path == audit.StdoutPath && (o.set("audit-log-maxsize") || o.set("audit-log-maxbackup")) {
		return errors.New("--audit-log-path -: standard output is not rotated; drop --audit-log-maxsize and --audit-log-maxbackup")
	}
	return nil
}

func (o *CommandOptions) checkAuditWebhook() error {
	w := o.Guard.AuditWebhook
	if w.BatchMaxSize <= 0 || w.BatchMaxWait <= 0 || w.BufferSize <= 0 || w.InitialBackoff <= 0 {
		return errors.New("--audit-webhook-batch-max-size, --audit-webhook-batch-max-wait, --audit-webhook-batch-buffer-size and --audit-webhook-initial-backoff must be positive")
	}
	if w.BatchMaxBytes <= 0 || w.BufferBytes <= 0 || o.Guard.Audit.MaxUnsentBytes <= 0 {
		return fmt.Errorf("--audit-webhook-batch-max-bytes, --audit-webhook-batch-buffer-bytes and --audit-webhook-unsent-max-bytes must be positive, e.g. %d, %d and %d", audit.DefaultWebhookBatchMaxBytes, audit.DefaultWebhookBufferBytes, audit.DefaultMaxUnsentBytes)
	}
	return nil
}

func (o *CommandOptions) checkAuditAnchor() error {
	if o.Guard.AuditAnchor.Interval <= 0 {
		return errors.New("--audit-anchor-interval must be positive, e.g. 10s")
	}
	return nil
}
