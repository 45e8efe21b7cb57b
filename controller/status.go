package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller/limits"
	"github.com/pipeguard/pipeguard/policy"
)

// writeStatus records each policy's outcome, on the leader only. It
// reports whether a warning it wrote should be looked at again later
// (Controller.warnings).
func (c *Controller) writeStatus(ctx context.Context, items []v1alpha1.PipeAccessPolicy, outcomes map[string]*outcome, gen *policy.Generation) (recheck bool) {
	if !c.leader() {
		return false
	}
	log := logr.FromContextOrDiscard(ctx)
	for i := range items {
		p := &items[i]
		o := outcomes[p.Name]
		want := p.Status.DeepCopy()
		want.ObservedGeneration = p.Generation
		want.PolicyGeneration = gen.Number
		cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: p.Generation}
		if o.err == nil {
			cond.Status, cond.Reason = metav1.ConditionTrue, ReasonEnforced
			msg := fmt.Sprintf("generation %d of this policy is in force (policy set generation %d); %s", p.Generation, gen.Number, gen.Default)
			ws, again := c.warnings(ctx, p)
			recheck = recheck || again
			for _, w := range slices.Backward(ws) {
				msg = "warning: " + w + "; " + msg
			}
			cond.Message = limits.Cut(msg, limits.ConditionMessage)
			want.LastEnforced = &v1alpha1.EnforcedVersion{Generation: p.Generation, Spec: *p.Spec.DeepCopy()}
		} else {
			cond.Status, cond.Reason = metav1.ConditionFalse, o.reason
			cond.Message = notInForce(limits.ConditionMessage, p.Generation, o, "see the log of pipeguard-webhook")
		}
		meta.SetStatusCondition(&want.Conditions, cond)
		if equality.Semantic.DeepEqual(want, &p.Status) {
			continue
		}
		if o.err != nil && c.opts.Recorder != nil {
			c.opts.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonInvalid, "Compile", "%s",
				notInForce(limits.EventNote, p.Generation, o, "see the Ready condition of this PipeAccessPolicy"))
		}
		patch := client.MergeFrom(p.DeepCopy())
		p.Status = *want
		if err := c.opts.Client.Status().Patch(ctx, p, patch); err != nil {
			log.Error(err, "cannot write PipeAccessPolicy status", "policy", p.Name)
		}
	}
	return recheck
}

// notInForce says in at most max bytes why generation of a policy is not
// in force: its compile errors, as many as fit, how many more there are and
// where to read them all (see), then which version is in force instead.
func notInForce(max int, generation int64, o *outcome, see string) string {
	head := fmt.Sprintf("the latest spec (generation %d) is not in force: ", generation)
	tail := "; " + fallbackNote(o.fallback)
	prefix, errs := regoErrors(o.err)
	if len(errs) < 2 {
		msg := o.err.Error()
		return limits.Fit(max, 1,
			func(k int) string {
				if k == 0 {
					return head
				}
				return head + msg
			},
			func(int) string { return tail })
	}
	// ast.Errors' own words, one error a line.
	return limits.Fit(max, len(errs),
		func(k int) string {
			var b strings.Builder
			fmt.Fprintf(&b, "%s%s%d errors occurred:", head, prefix, len(errs))
			for _, e := range errs[:k] {
				b.WriteString("\n" + e.Error())
			}
			return b.String()
		},
		func(more int) string {
			if more == 0 {
				return tail
			}
			return fmt.Sprintf("\n… and %d more %s (%s)%s", more, plural(more, "error", "errors"), see, tail)
		})
}

// regoErrors finds the rego errors err lists and the words before them
// (such as OPA's "bundle activation failed: "), or none.
func regoErrors(err error) (string, ast.Errors) {
	var errs ast.Errors
	if !errors.As(err, &errs) {
		return "", nil
	}
	msg, list := err.Error(), errs.Error()
	if !strings.HasSuffix(msg, list) {
		return "", nil
	}
	return strings.TrimSuffix(msg, list), errs
}

func fallbackNote(good *v1alpha1.PipeAccessPolicy) string {
	if good == nil {
		return "no version of this policy is in force; fix the error to enforce it"
	}
	action := good.Spec.EnforcementAction
	if action == "" {
		action = v1alpha1.Deny
	}
	return fmt.Sprintf("generation %d of this policy stays in force until the error is fixed (enforcementAction %s)", good.Generation, action)
}

func ptrIf(ok bool, p v1alpha1.PipeAccessPolicy) *v1alpha1.PipeAccessPolicy {
	if !ok {
		return nil
	}
	return &p
}
