// Package webhookconfig reads the ValidatingWebhookConfiguration pipeguard
// ships (config/webhook/manifests.yaml) as the API server would receive it,
// for the tests that evaluate its rules and matchConditions (test/admission,
// the webhook's integration tests) and for the load tool (hack/bench).
package webhookconfig

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
