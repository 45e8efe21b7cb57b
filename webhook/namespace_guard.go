package webhook

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kjson "sigs.k8s.io/json"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/invisible"
	"github.com/pipeguard/pipeguard/policy"
)

var namespaceKind = schema.GroupKind{Kind: "Namespace"}

// GrantVerb is the verb on pipeaccesspolicies.pipeguard.io that lets a user
// add, change or remove a namespace's allowance labels.
const GrantVerb = "grant"

// Grants decides whether a user may change allowance labels.
type Grants interface {
	MayGrant(ctx context.Context, user authnv1.UserInfo) (allowed bool, reason string, err error)
}

// SubjectAccessReviewGrants asks the API server, with a
// SubjectAccessReview, whether the user may "grant" pipeaccesspolicies.
// Cluster admins hold every verb; others get it through a ClusterRole such
// as pipeguard-allowance-granter.
type SubjectAccessReviewGrants struct {
	Client client.Client
}

// MayGrant implements Grants.
func (g SubjectAccessReviewGrants) MayGrant(ctx context.Context, user authnv1.UserInfo) (bool, string, error) {
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID,
		ResourceAttributes: &authzv1.ResourceAttributes{
			Group: v1alpha1.GroupVersion.Group, Resource: "pipeaccesspolicies", Verb: GrantVerb,
		},
	}}
	if len(user.Extra) > 0 {
		sar.Spec.Extra = map[string]authzv1.ExtraValue{}
		for k, v := range user.Extra {
			sar.Spec.Extra[k] = authzv1.ExtraValue(v)
		}
	}
	if err := g.Client.Create(ctx, sar); err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	return sar.Status.Allowed, sar.Status.Reason, nil
}

// reviewNamespace guards the labels that grant pipe access: whoever can edit
// a Namespace must not thereby let its pods mount protected pipes.
func (h *Handler) reviewNamespace(ctx context.Context, log reviewLog, req Request) (Outcome, error) {
	newLabels, err := namespaceLabels(req.Object)
	if err != nil {
		return Outcome{}, badRequest(fmt.Errorf("cannot decode request.object as a Namespace: %w", err))
	}
	var oldLabels map[string]string
	if len(req.OldObject) > 0 {
		if oldLabels, err = namespaceLabels(req.OldObject); err != nil {
			return Outcome{}, badRequest(fmt.Errorf("cannot decode request.oldObject as a Namespace: %w", err))
		}
	}
	changed := changedAllowanceLabels(oldLabels, newLabels, h.opts.Engine.AllowanceLabels())
	if len(changed) == 0 {
		return allowed, nil
	}
	ok, reason, err := h.opts.Grants.MayGrant(ctx, req.User)
	if err != nil {
		log.get().Error(err, "cannot check who may change allowance labels")
		return Outcome{}, fmt.Errorf("internal error: cannot check whether %q may change the allowance labels of namespace %q: %w; the change is rejected until the check succeeds", req.User.Username, req.Name, err)
	}
	if ok {
		log.get().Info("allowance labels changed", "labels", changed)
		return allowed, nil
	}
	if reason != "" {
		reason = " (" + reason + ")"
	}
	// The user name and the authorizer's reason come from outside the
	// cluster (an identity provider, a webhook authorizer): escape them.
	msg := invisible.Escape(fmt.Sprintf("[namespace-allowance] user %q may not add, change or remove label %s on namespace %q: such labels grant the namespace's pods access to protected host pipes, now or once a policy reads them%s; ask a cluster admin, or get the %q verb on pipeaccesspolicies.pipeguard.io (ClusterRole pipeguard-allowance-granter)",
		req.User.Username, strings.Join(changed, ", "), req.Name, reason, GrantVerb))
	log.denied([]string{msg}, 0)
	return Outcome{Verdict: policy.Deny, Denials: []string{msg}}, nil
}

// changedAllowanceLabels lists, sorted, the guarded keys whose value a
// change of labels from old to new sets, alters or removes: every key under
// policy.GuardedLabelDomain, whether or not a policy reads it yet (a value
// set while nobody read it must not grant once a policy does), and every
// key a policy in force reads.
func changedAllowanceLabels(oldLabels, newLabels map[string]string, read []string) []string {
	guarded := map[string]bool{}
	for _, key := range read {
		guarded[key] = true
	}
	for _, m := range []map[string]string{oldLabels, newLabels} {
		for key := range m {
			if policy.GuardedLabel(key) {
				guarded[key] = true
			}
		}
	}
	var changed []string
	for key := range guarded {
		oldValue, hadOld := oldLabels[key]
		newValue, hasNew := newLabels[key]
		if hadOld != hasNew || oldValue != newValue {
			changed = append(changed, key)
		}
	}
	sort.Strings(changed)
	return changed
}

func namespaceLabels(raw []byte) (map[string]string, error) {
	var ns struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &ns); err != nil {
		return nil, err
	}
	return ns.Metadata.Labels, nil
}
