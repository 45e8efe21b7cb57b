// Package prefilter reads the CEL matchConditions with which the API server
// decides, before calling pipeguard's webhook, whether a request could name
// a protected named pipe at all. Its tests hold those expressions to
// package pipepath: every object with a path pipepath protects must reach
// the webhook, and ordinary host paths must not need it. They hold the
// Namespace webhook's expression to the webhook's namespace guard: a
// Namespace change reaches the webhook exactly when the guard would refuse
// it to a user who may not grant.
package prefilter

import (
	"fmt"
	"os"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// Load reads the ValidatingWebhookConfiguration in file, such as
// config/webhook/manifests.yaml.
func Load(file string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if cfg.Kind != "ValidatingWebhookConfiguration" || len(cfg.Webhooks) == 0 {
		return nil, fmt.Errorf("%s: no ValidatingWebhookConfiguration with webhooks", file)
	}
	return &cfg, nil
}
