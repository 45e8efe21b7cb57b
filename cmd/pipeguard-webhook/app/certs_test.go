package app

import (
	"context"
	"strings"
	"testing"
	"time"

	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

func TestCertRotationNeedsEveryName(t *testing.T) {
	full := CertRotation{SecretName: "s", Namespace: "ns", ServiceName: "svc", WebhookConfigName: "w"}
	tests := map[string]struct {
		mutate func(*CertRotation)
		want   string
	}{
		"complete":        {func(*CertRotation) {}, ""},
		"no secret":       {func(c *CertRotation) { c.SecretName = "" }, "name of the Secret"},
		"no namespace":    {func(c *CertRotation) { c.Namespace = "" }, "namespace of the Secret and Service"},
		"no service":      {func(c *CertRotation) { c.ServiceName = "" }, "name of the webhook Service"},
		"no webhook name": {func(c *CertRotation) { c.WebhookConfigName = "" }, "ValidatingWebhookConfiguration"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := full
			tc.mutate(&c)
			err := c.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("validate() = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	if got := full.DNSName(); got != "svc.ns.svc" {
		t.Errorf("DNSName() = %q, want svc.ns.svc", got)
	}
}

// startRecorder is a webhook server that records that it was started.
type startRecorder struct {
	ctrlwebhook.Server
	started chan struct{}
}

func (s startRecorder) Start(context.Context) error { close(s.started); return nil }

func TestGatedServerStartsOnlyOnceTheCertificateIsReady(t *testing.T) {
	ready := make(chan struct{})
	inner := startRecorder{started: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- gatedServer{Server: inner, ready: ready}.Start(context.Background()) }()

	select {
	case <-inner.started:
		t.Fatal("the server started before the certificate was ready")
	case <-time.After(100 * time.Millisecond):
	}
	close(ready)
	select {
	case <-inner.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not start once the certificate was ready")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Stopped while waiting: returns without starting.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := startRecorder{started: make(chan struct{})}
	if err := (gatedServer{Server: never, ready: make(chan struct{})}).Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-never.started:
		t.Fatal("a stopped gate started the server")
	default:
	}
}
