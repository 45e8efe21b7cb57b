package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// prerequisite is what an overlay needs from other projects before it can
// be applied: their CRDs, what installs them, and what to apply without
// them.
type prerequisite struct {
	CRDs        []string
	InstalledBy string
	Instead     string
}

// prerequisiteOf returns the prerequisite of an overlay; ok is false for
// overlays that need nothing beyond Kubernetes itself (config/policyreport
// brings its own CRDs).
func prerequisiteOf(overlay string) (p prerequisite, ok bool) {
	switch overlay {
	case "prometheus", "prometheus-agent":
		crds := []string{"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"}
		if overlay == "prometheus-agent" { // the agent is scraped through a PodMonitor
			crds = []string{"servicemonitors.monitoring.coreos.com", "podmonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"}
		}
		return prerequisite{
			CRDs:        crds,
			InstalledBy: "the Prometheus Operator (kube-prometheus-stack installs it)",
			Instead: "apply only pipeguard-webhook's metrics Service and scrape it with a scrape config of your own:\n" +
				"  kubectl apply --server-side -f config/prometheus/metrics_service.yaml",
		}, true
	case "cert-manager":
		return prerequisite{
			CRDs:        []string{"certificates.cert-manager.io", "issuers.cert-manager.io"},
			InstalledBy: "cert-manager (https://cert-manager.io/docs/installation/)",
			Instead: "install config/default, whose pipeguard-webhook issues and rotates its own certificate:\n" +
				"  make deploy OVERLAY=default",
		}, true
	}
	return prerequisite{}, false
}

// kubectlTimeout bounds one CRD lookup.
const kubectlTimeout = 30 * time.Second

// preflight checks with kubectl, against the cluster of its current
// context, that the CRDs the overlay needs exist. The error names the
// missing CRDs, what installs them and what to apply instead, or says why
// they could not be looked up.
func preflight(kubectl, overlay string) error {
	p, ok := prerequisiteOf(overlay)
	if !ok {
		return nil
	}
	var missing []string
	for _, crd := range p.CRDs {
		found, err := crdExists(kubectl, crd)
		if err != nil {
			return fmt.Errorf("OVERLAY=%s: cannot check that the cluster has CRD %s, which config/%s needs: %w; nothing was applied", overlay, crd, overlay, err)
		}
		if !found {
			missing = append(missing, crd)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("OVERLAY=%s: the cluster lacks the CRDs %s, which config/%s needs; nothing was applied.\n"+
		"They come with %s: install it first.\nWithout it, %s",
		overlay, strings.Join(missing, ", "), overlay, p.InstalledBy, p.Instead)
}

// crdExists runs kubectl get crd name: found when it succeeds, not found
// when kubectl says NotFound, and an error with kubectl's words otherwise
// (no cluster, no permission).
func crdExists(kubectl, name string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubectl, "get", "customresourcedefinition", name, "--output=name").CombinedOutput()
	if err == nil {
		return true, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && strings.Contains(string(out), "NotFound") {
		return false, nil
	}
	return false, fmt.Errorf("%s get customresourcedefinition %s: %w: %s", kubectl, name, err, strings.TrimSpace(string(out)))
}
