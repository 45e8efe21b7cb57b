package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
)

// TimeoutStatusInterval is how often, at most, the status of policies
// whose admin rules run out of time is rewritten: the first timeout shows
// at once, later ones are counted in the next rewrite, so that a stream of
// slow reviews costs one status write per interval, not one per review.
const TimeoutStatusInterval = 10 * time.Second

// reconciled is what one reconcile decided: each policy's outcome, for
// the metadata.generation it saw, and the generation in force.
type reconciled struct {
	outcomes    map[string]*outcome
	generations map[string]int64
	gen         *policy.Generation
}

func newReconciled(items []v1alpha1.PipeAccessPolicy, outcomes map[string]*outcome, gen *policy.Generation) *reconciled {
	r := &reconciled{outcomes: outcomes, generations: make(map[string]int64, len(items)), gen: gen}
	for i := range items {
		r.generations[items[i].Name] = items[i].Generation
	}
	return r
}

// reportTimeouts rewrites the Ready condition of the policies whose admin
// rules ran out of time, so that it says so (Controller.warnings), each
// time the engine reports timeouts and at most once per
// TimeoutStatusInterval, until ctx ends.
func (c *Controller) reportTimeouts(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.opts.Engine.AdminRuleTimedOut():
		}
		if err := c.refreshStatus(ctx); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "cannot report admin rules that ran out of time in the status of their policies")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(TimeoutStatusInterval):
		}
	}
}

// refreshStatus writes the status of every policy as the latest
// reconcile decided it, with the warnings of now. A policy changed since
// is left to the reconcile its change queues.
func (c *Controller) refreshStatus(ctx context.Context) error {
	var list v1alpha1.PipeAccessPolicyList
	if err := c.opts.Client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing PipeAccessPolicies: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.last
	if last == nil {
		return nil
	}
	var items []v1alpha1.PipeAccessPolicy
	for _, p := range list.Items {
		if g, ok := last.generations[p.Name]; ok && g == p.Generation {
			items = append(items, p)
		}
	}
	c.writeStatus(ctx, items, last.outcomes, last.gen)
	return nil
}
