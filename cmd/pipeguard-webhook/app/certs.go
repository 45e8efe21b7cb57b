package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// CertRotation has pipeguard-webhook issue and rotate its own serving
// certificate (github.com/open-policy-agent/cert-controller): a CA and a
// certificate for the Service's DNS name are kept in a Secret, which the
// Deployment mounts at Options.CertDir, and the CA is injected as the
// caBundle of every webhook in the ValidatingWebhookConfiguration. Every
// replica runs the rotator; the first to find the Secret empty fills it.
type CertRotation struct {
	// SecretName and Namespace locate the Secret. It must exist (the
	// manifests ship it empty): the rotator updates it, it never creates it.
	SecretName, Namespace string
	// ServiceName is the Service the API server calls; the certificate is
	// issued for <ServiceName>.<Namespace>.svc.
	ServiceName string
	// WebhookConfigName is the ValidatingWebhookConfiguration whose webhooks
	// receive the CA bundle.
	WebhookConfigName string
}

func (c *CertRotation) validate() error {
	switch {
	case c.SecretName == "":
		return errors.New("certificate rotation needs the name of the Secret that holds the certificate")
	case c.Namespace == "":
		return errors.New("certificate rotation needs the namespace of the Secret and Service; pass it, or run in a pod")
	case c.ServiceName == "":
		return errors.New("certificate rotation needs the name of the webhook Service")
	case c.WebhookConfigName == "":
		return errors.New("certificate rotation needs the name of the ValidatingWebhookConfiguration")
	}
	return nil
}

// DNSName is the name the serving certificate is issued for.
func (c *CertRotation) DNSName() string {
	return fmt.Sprintf("%s.%s.svc", c.ServiceName, c.Namespace)
}

// addCertRotator adds the rotator to mgr, which closes ready once the
// certificate files exist in opts.CertDir and the CA bundle has been
// injected.
func addCertRotator(mgr manager.Manager, opts Options, ready chan struct{}) error {
	c := opts.CertRotation
	if err := c.validate(); err != nil {
		return err
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: c.Namespace, Name: c.SecretName},
		CertDir:        opts.CertDir,
		CertName:       opts.CertName,
		KeyName:        opts.KeyName,
		CAName:         "pipeguard-ca",
		CAOrganization: "pipeguard",
		DNSName:        c.DNSName(),
		ExtraDNSNames:  []string{c.DNSName() + ".cluster.local"},
		IsReady:        ready,
		Webhooks:       []rotator.WebhookInfo{{Name: c.WebhookConfigName, Type: rotator.Validating}},
		FieldOwner:     "pipeguard-webhook",
		// Every replica serves, so every replica needs the files; the
		// rotator's update of the Secret is optimistic, so concurrent
		// replicas cannot both win.
		RequireLeaderElection: false,
		// Inject the CA only once this replica's files are mounted.
		EnableReadinessCheck: true,
	})
	if err != nil {
		return fmt.Errorf("setting up certificate rotation: %w", err)
	}
	return nil
}

// gatedServer is a webhook server that starts only once ready is closed:
// until the certificate exists it does not listen at all, rather than
// failing to load the files and taking the manager down with it.
type gatedServer struct {
	ctrlwebhook.Server
	ready <-chan struct{}
}

// Start waits for the certificate, then serves until ctx ends.
func (s gatedServer) Start(ctx context.Context) error {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil
	}
	return s.Server.Start(ctx)
}

// closed reports whether ch has been closed; a nil channel never is.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
