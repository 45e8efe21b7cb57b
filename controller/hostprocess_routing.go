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

// The entry of pipeguard's ValidatingWebhookConfiguration that sends
// HostProcess objects to the webhook, and its condition that
// HostProcessRouting keeps in step with the policies in force.
const (
	HostProcessWebhook   = "hostprocess.pipeguard.io"
	HostProcessCondition = "a-policy-withholds-hostprocess"
)

// DefaultHostProcessResync is how often HostProcessRouting checks the
// webhook configuration besides after every policy change, so that a
// re-applied configuration is put right within it.
const DefaultHostProcessResync = 30 * time.Second

// HostProcessRouting keeps the HostProcess entry of the webhook
// configuration routing HostProcess objects to the webhook exactly while a
// policy in force withholds the HostProcess allowance. A HostProcess
// container reaches every host pipe without a mount, so such a policy must
// see every one; without one, HostProcess CNI and kube-proxy DaemonSets
// never wait on pipeguard. It runs on the leader.
type HostProcessRouting struct {
	Client client.Client
	Engine *policy.Engine
	// WebhookConfig names the ValidatingWebhookConfiguration.
	WebhookConfig string
	// Resync is DefaultHostProcessResync when zero.
	Resync  time.Duration
	trigger chan struct{}
}

// NewHostProcessRouting returns a HostProcessRouting for the configuration
// named config.
func NewHostProcessRouting(c client.Client, e *policy.Engine, config string) *HostProcessRouting {
	return &HostProcessRouting{Client: c, Engine: e, WebhookConfig: config, trigger: make(chan struct{}, 1)}
}

// Trigger asks for a check soon, as after a new policy generation.
func (r *HostProcessRouting) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// NeedLeaderElection: only the leader writes the configuration.
func (r *HostProcessRouting) NeedLeaderElection() bool { return true }

// Start checks at once, after every Trigger and every Resync, until ctx
// ends.
func (r *HostProcessRouting) Start(ctx context.Context) error {
	resync := r.Resync
	if resync <= 0 {
		resync = DefaultHostProcessResync
	}
	log := logr.FromContextOrDiscard(ctx).WithName("hostprocess-routing")
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		if err := r.Sync(ctx); err != nil {
			log.Error(err, "cannot route HostProcess objects as the policies in force need", "webhookConfiguration", r.WebhookConfig)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.trigger:
		case <-tick.C:
		}
	}
}

// Sync sets the condition from the generation in force. It does nothing
// before the first generation compiled.
func (r *HostProcessRouting) Sync(ctx context.Context) error {
	gen := r.Engine.Current()
	if gen == nil {
		return nil
	}
	withheldBy := gen.HostProcessWithheldBy()
	want := "false"
	if len(withheldBy) > 0 {
		want = "true"
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.WebhookConfig}, &cfg); err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", r.WebhookConfig, err)
	}
	cond, err := hostProcessCondition(&cfg)
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
			HostProcessCondition, HostProcessWebhook, r.WebhookConfig, want, err)
	}
	logr.FromContextOrDiscard(ctx).Info("HostProcess objects now "+map[string]string{"true": "go to the webhook", "false": "skip the webhook"}[want],
		"webhookConfiguration", r.WebhookConfig, "withheldBy", withheldBy, "generation", gen.Number)
	return nil
}

// hostProcessCondition finds the condition in cfg, or says what is missing.
func hostProcessCondition(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) (*admissionregistrationv1.MatchCondition, error) {
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		if w.Name != HostProcessWebhook {
			continue
		}
		for j := range w.MatchConditions {
			if w.MatchConditions[j].Name == HostProcessCondition {
				return &w.MatchConditions[j], nil
			}
		}
		return nil, fmt.Errorf("webhook %s of ValidatingWebhookConfiguration %s has no matchCondition %s; re-apply config/webhook",
			HostProcessWebhook, cfg.Name, HostProcessCondition)
	}
	return nil, fmt.Errorf("ValidatingWebhookConfiguration %s has no webhook %s, so HostProcess pods are never reviewed; re-apply config/webhook",
		cfg.Name, HostProcessWebhook)
}
