package app

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/policy"
)

// routings are the leader's Routings of the webhook configuration's
// entries that send objects only while the cluster needs it; both nil
// when Options.WebhookConfigName is empty.
type routings struct {
	hostProcess, claims *controller.Routing
}

// addRoutings adds them to mgr. last reads the audit's latest report.
func addRoutings(mgr manager.Manager, opts Options, scheme *runtime.Scheme, engine *policy.Engine, last func() *controller.AuditReport) (routings, error) {
	if opts.WebhookConfigName == "" {
		return routings{}, nil
	}
	// Uncached: the webhook may read one configuration, not watch them all.
	direct, err := client.New(opts.Config, client.Options{Scheme: scheme})
	if err != nil {
		return routings{}, fmt.Errorf("the webhook configuration's client: %w", err)
	}
	r := routings{
		hostProcess: controller.NewHostProcessRouting(direct, engine, opts.WebhookConfigName),
		claims:      controller.NewClaimsRouting(direct, last, opts.WebhookConfigName),
	}
	for _, x := range []*controller.Routing{r.hostProcess, r.claims} {
		if err := mgr.Add(x); err != nil {
			return routings{}, fmt.Errorf("adding the routing of %s: %w", x.Webhook, err)
		}
	}
	return r, nil
}

// onLoad is what a new policy generation triggers besides the audit.
func (r routings) onLoad() {
	if r.hostProcess != nil {
		r.hostProcess.Trigger()
	}
}

// onPass is what an audit pass triggers.
func (r routings) onPass() {
	if r.claims != nil {
		r.claims.Trigger()
	}
}
