package controller

import (
	"context"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
)

// warnings lists what a policy in force grants beyond what its spec seems
// to say, and what its rules did that admins must know (its admin rules
// ran out of time, so reviews failed closed), each a clause for the start
// of its Ready message. The policy stays in force either way.
func (c *Controller) warnings(_ context.Context, p *v1alpha1.PipeAccessPolicy) []string {
	var ws []string
	for _, w := range []string{policy.PrivilegedWarning(&p.Spec), policy.HostProcessWarning(&p.Spec), policy.SelectorWarning(&p.Spec)} {
		if w != "" {
			ws = append(ws, w)
		}
	}
	if w := c.opts.Engine.AdminRuleWarning(p.Name, p.Generation); w != "" {
		ws = append(ws, w)
	}
	return ws
}
