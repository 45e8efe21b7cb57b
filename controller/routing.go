package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/policy"
)

// The entries of pipeguard's ValidatingWebhookConfiguration that send
// objects to the webhook only while the cluster needs it, each with the
// condition a Routing keeps in step.
const (
	// HostProcessWebhook sends HostProcess objects while a policy in force
	// withholds the HostProcess allowance.
	HostProcessWebhook   = "hostprocess.pipeguard.io"
	HostProcessCondition = "a-policy-withholds-hostprocess"
	// ClaimsWebhook sends objects that mount a PersistentVolumeClaim while
	// the background audit finds a PersistentVolume that violates a policy.
	ClaimsWebhook   = "claims.pipeguard.io"
	ClaimsCondition = "a-protected-persistentvolume-exists"
)

// DefaultRoutingResync is how often a Routing checks the webhook
// configuration besides after every Trigger, so that a re-applied
// configuration is put right within it.
const DefaultRoutingResync = 30 * time.Second

// Routing keeps one condition of one webhook entry 'true' exactly while
// Need says so. Sending objects to the webhook only while they need it
// keeps an outage of pipeguard from stopping what cannot reach a pipe:
// HostProcess CNI and kube-proxy DaemonSets, pods with ordinary storage.
// It runs on the leader.
type Routing struct {
	Client client.Client
	// WebhookConfig names the ValidatingWebhookConfiguration; Webhook and
	// Condition the entry and its condition.
	WebhookConfig, Webhook, Condition string
	// Need says whether the entry must send objects, and why (for the
	// log); known is false while it cannot tell yet, which leaves the
	// condition as it is.
	Need func() (need, known bool, why []string)
	// Resync is DefaultRoutingResync when zero.
	Resync  time.Duration
	trigger chan struct{}
}

// NewHostProcessRouting routes HostProcess objects while a policy of the
// generation in force withholds the HostProcess allowance: a HostProcess
// container reaches every host pipe without a mount.
func NewHostProcessRouting(c client.Client, e *policy.Engine, config string) *Routing {
	return newRouting(c, config, HostProcessWebhook, HostProcessCondition, func() (bool, bool, []string) {
		gen := e.Current()
		if gen == nil {
			return false, false, nil
		}
		by := gen.HostProcessWithheldBy()
		return len(by) > 0, true, by
	})
}

// NewClaimsRouting routes objects that mount a PersistentVolumeClaim while
// the latest audit report (last) holds a PersistentVolume that violates a
// policy: a claim bound to it mounts a protected pipe.
func NewClaimsRouting(c client.Client, last func() *AuditReport, config string) *Routing {
	return newRouting(c, config, ClaimsWebhook, ClaimsCondition, func() (bool, bool, []string) {
		rep := last()
		if rep == nil {
			return false, false, nil
		}
		var pvs []string
		for _, r := range rep.Results {
			if r.Kind == "PersistentVolume" {
				pvs = append(pvs, r.Name)
			}
		}
		return len(pvs) > 0, true, pvs
	})
}

func newRouting(c client.Client, config, webhook, condition string, need func() (bool, bool, []string)) *Routing {
	return &Routing{Client: c, WebhookConfig: config, Webhook: webhook, Condition: condition, Need: need, trigger: make(chan struct{}, 1)}
}

// Trigger asks for a check soon, as after a new policy generation or an
// audit pass.
func (r *Routing) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// NeedLeaderElection: only the leader writes the configuration.
func (r *Routing) NeedLeaderElection() bool { return true }

// Start checks at once, after every Trigger and every Resync, until ctx
// ends.
func (r *Routing) Start(ctx context.Context) error {
	resync := r.Resync
	if resync <= 0 {
		resync = DefaultRoutingResync
	}
	log := logr.FromContextOrDiscard(ctx).WithName("routing").WithValues("webhook", r.Webhook)
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		if err := r.Sync(logr.NewContext(ctx, log)); err != nil {
			log.Error(err, "cannot route objects to the webhook as the cluster needs", "webhookConfiguration", r.WebhookConfig)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.trigger:
		case <-tick.C:
		}
	}
}

// Sync sets the condition from Need.
func (r *Routing) Sync(ctx context.Context) error {
	need, known, why := r.Need()
	if !known {
		return nil
	}
	want := fmt.Sprint(need)
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.WebhookConfig}, &cfg); err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", r.WebhookConfig, err)
	}
	cond, err := matchCondition(&cfg, r.Webhook, r.Condition)
	if err != nil {
		return err
	}
	if cond.Expression == want {
		return nil
	}
	before := cfg.DeepCopy()
	cond.Expression = want
	if err := r.Client.Patch(ctx, &cfg, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("setting matchCondition %s of webhook %s in ValidatingWebhookConfiguration %s to %s: %w",
			r.Condition, r.Webhook, r.WebhookConfig, want, err)
	}
	logr.FromContextOrDiscard(ctx).Info("objects now "+map[bool]string{true: "go to the webhook", false: "skip the webhook"}[need],
		"webhookConfiguration", r.WebhookConfig, "condition", r.Condition, "because", why)
	return nil
}

// matchCondition finds the condition in cfg, or says what is missing.
func matchCondition(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, webhook, condition string) (*admissionregistrationv1.MatchCondition, error) {
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		if w.Name != webhook {
			continue
		}
		for j := range w.MatchConditions {
			if w.MatchConditions[j].Name == condition {
				return &w.MatchConditions[j], nil
			}
		}
		return nil, fmt.Errorf("webhook %s of ValidatingWebhookConfiguration %s has no matchCondition %s; re-apply config/webhook",
			webhook, cfg.Name, condition)
	}
	return nil, fmt.Errorf("ValidatingWebhookConfiguration %s has no webhook %s, so the objects it sends are never reviewed; re-apply config/webhook",
		cfg.Name, webhook)
}
