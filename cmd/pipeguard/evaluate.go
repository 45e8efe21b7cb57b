package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// Decisions, as the policy eval table prints them.
const (
	decisionAllow = "ALLOW"
	decisionWarn  = "WARN"
	decisionDeny  = "DENY"
	decisionSkip  = "SKIP" // not reviewed: the reason says why
)

// evalDecision is an object's decision as -o json and -o yaml spell it:
// the policy.Verdict of a reviewed object, or skip for one admission does
// not review.
type evalDecision string

// notReviewedDecision is the decision on an object admission does not
// review.
const notReviewedDecision evalDecision = "skip"

// decided is the decision on a reviewed object.
func decided(v policy.Verdict) evalDecision { return evalDecision(v) }

// word is how the policy eval table prints a decision: a dryrun admits
// the object, so it prints as ALLOW, with its violations marked
// "dryrun:"; an object that is not reviewed prints as SKIP.
func (d evalDecision) word() string {
	switch d {
	case decided(policy.Deny):
		return decisionDeny
	case decided(policy.Warn):
		return decisionWarn
	case notReviewedDecision:
		return decisionSkip
	}
	return decisionAllow
}

// evalResult is one object's outcome, as -o json prints it.
type evalResult struct {
	Source     string `json:"source"`
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	// Decision is the policy.Verdict (allow, warn, dryrun or deny), or
	// skip for an object that is not reviewed.
	Decision   evalDecision       `json:"decision"`
	Reason     string             `json:"reason,omitempty"`
	Deny       []policy.Violation `json:"deny,omitempty"`
	Warn       []policy.Violation `json:"warn,omitempty"`
	DryRun     []policy.Violation `json:"dryrun,omitempty"`
	Generation int64              `json:"policyGeneration,omitempty"`
	// input is the facts the rules were asked about (webhook.Outcome's
	// Input), for -o input.
	input *policy.Input
}

// word is the decision as the table prints it.
func (r evalResult) word() string { return r.Decision.word() }

// reviewedKinds are the kinds admission reviews for pipe mounts, as the
// skip reason names them: the table of package kinds, which
// webhook.Supported reads too.
var reviewedKinds = func() []schema.GroupKind {
	var out []schema.GroupKind
	for _, k := range kinds.All() {
		out = append(out, k.GVK.GroupKind())
	}
	return out
}()

// notReviewed is the reason given for an object of a kind admission does
// not review.
var notReviewed = "pipeguard reviews only " + kindSentence(kinds.All()) + " objects; " +
	"the pods any other object makes are reviewed when they are created"

// kindSentence names ks for a reader: the core kinds one by one, then each
// other group followed by its kinds ("apps Deployment and DaemonSet"),
// groups in the order of their first kind in ks and the last item after
// ", and".
func kindSentence(ks []kinds.Kind) string {
	var groups []string
	byGroup := map[string][]string{}
	for _, k := range ks {
		g := k.GVK.Group
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], k.GVK.Kind)
	}
	var items []string
	for _, g := range groups {
		if g == "" {
			items = append(items, byGroup[g]...)
			continue
		}
		items = append(items, g+" "+joinLast(byGroup[g], " and "))
	}
	return joinLast(items, ", and ")
}

// joinLast joins items with ", ", but the last two with last.
func joinLast(items []string, last string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + last + items[len(items)-1]
}

// clusterScoped are the built-in kinds that have no namespace, besides the
// reviewed kinds, whose scope package kinds gives (see isClusterScoped).
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Kind: "Node"}: true, {Kind: "ComponentStatus"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: true, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}: true, {Group: "storage.k8s.io", Kind: "CSIDriver"}: true,
	{Group: "storage.k8s.io", Kind: "CSINode"}: true, {Group: "storage.k8s.io", Kind: "VolumeAttachment"}: true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true, {Group: "networking.k8s.io", Kind: "IPAddress"}: true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                           true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:           true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                  true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                 true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}: true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                             true, {Group: "resource.k8s.io", Kind: "ResourceSlice"}: true,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}: true,
	{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}:        true,
	{Group: "wgpolicyk8s.io", Kind: "ClusterPolicyReport"}:              true,
	{Group: v1alpha1.GroupVersion.Group, Kind: "PipeAccessPolicy"}:      true,
}

// groupKind is the group and kind of a document; the zero value for one
// that is not an object.
func groupKind(d document) schema.GroupKind {
	gv, err := schema.ParseGroupVersion(d.meta.APIVersion)
	if err != nil {
		return schema.GroupKind{Kind: d.meta.Kind}
	}
	return schema.GroupKind{Group: gv.Group, Kind: d.meta.Kind}
}

// skipReason says why admission would not review d, or "" when it would.
func skipReason(d document) string {
	if d.skip != "" {
		return d.skip
	}
	gk := groupKind(d)
	switch {
	case gk.Group == "kustomize.config.k8s.io":
		return "not reviewed: a kustomize file, not an object the API server receives; evaluate what it builds with -k DIR"
	case gk == schema.GroupKind{Kind: "Namespace"}:
		return "not reviewed: a Namespace mounts no pipe; its labels apply to the objects evaluated in it"
	case gk == schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "PipeAccessPolicy"}:
		return "not reviewed: a policy, not a workload; to evaluate with it, give it as a policy"
	case !webhook.Supported(gk):
		return fmt.Sprintf("not reviewed: %s", notReviewed)
	}
	return ""
}

// evaluator decides on manifest objects with the handler the webhook
// serves, each as a CREATE.
type evaluator struct {
	handler   *webhook.Handler
	engine    *policy.Engine
	namespace string // of objects that name none
}

// newEvaluator evaluates against engine, with the labels of the Namespaces
// among docs, replaced per namespace by labels.
func newEvaluator(engine *policy.Engine, docs []document, labels map[string]map[string]string, defaultNS string) *evaluator {
	namespaces := webhook.StaticNamespaces{}
	for _, d := range docs {
		if d.skip == "" && d.meta.Kind == "Namespace" && d.meta.APIVersion == "v1" {
			namespaces[d.meta.Metadata.Name] = d.meta.Metadata.Labels
		}
	}
	for ns, l := range labels {
		namespaces[ns] = l
	}
	return &evaluator{
		handler:   webhook.NewHandler(webhook.Options{Engine: engine, Namespaces: namespaces}),
		engine:    engine,
		namespace: defaultNS,
	}
}

// evaluateAll evaluates every document, in order.
func (e *evaluator) evaluateAll(ctx context.Context, docs []document) ([]evalResult, error) {
	results := make([]evalResult, 0, len(docs))
	for i, d := range docs {
		r, err := e.evaluate(ctx, d, i)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// evaluate decides on one document.
func (e *evaluator) evaluate(ctx context.Context, d document, i int) (evalResult, error) {
	r := evalResult{Source: d.source, APIVersion: d.meta.APIVersion, Kind: d.meta.Kind, Name: d.meta.Metadata.Name}
	if reason := skipReason(d); reason != "" {
		r.Decision, r.Reason = notReviewedDecision, reason
		if d.skip == "" {
			r.Namespace = e.namespaceOf(d)
		}
		return r, nil
	}
	req, err := e.request(d, i)
	if err != nil {
		return r, err
	}
	r.Namespace = req.Namespace
	out, err := e.handler.Decide(ctx, req)
	if err != nil {
		return r, badInput("%s: %s %q: %v", d.source, d.meta.Kind, d.meta.Metadata.Name, err)
	}
	r.Decision, r.input = decided(out.Verdict), out.Input
	if dec := out.Decision; dec != nil {
		r.Deny, r.Warn, r.DryRun, r.Generation = dec.Deny, dec.Warn, dec.DryRun, dec.Generation
	}
	return r, nil
}

// isClusterScoped reports whether objects of gk have no namespace.
func isClusterScoped(gk schema.GroupKind) bool {
	if k, ok := kinds.Lookup(gk); ok {
		return !k.Namespaced
	}
	return clusterScoped[gk]
}

// namespaceOf is the namespace the object would be created in.
func (e *evaluator) namespaceOf(d document) string {
	if isClusterScoped(groupKind(d)) {
		return ""
	}
	if d.meta.Metadata.Namespace != "" {
		return d.meta.Metadata.Namespace
	}
	return e.namespace
}

// request is the CREATE of a manifest object, as the API server would ask
// about it.
func (e *evaluator) request(d document, i int) (webhook.Request, error) {
	gv, err := schema.ParseGroupVersion(d.meta.APIVersion)
	if err != nil {
		return webhook.Request{}, badInput("%s: apiVersion %q: %v", d.source, d.meta.APIVersion, err)
	}
	plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(d.meta.Kind))
	return webhook.Request{
		UID:       fmt.Sprintf("pipeguard-cli-%d", i),
		Kind:      gv.WithKind(d.meta.Kind),
		Resource:  plural.Resource,
		Namespace: e.namespaceOf(d),
		Name:      d.meta.Metadata.Name,
		Operation: admissionv1.Create,
		User:      authnv1.UserInfo{Username: "pipeguard-cli"},
		Object:    d.raw,
	}, nil
}

// inputs returns the rego input of every object the rules are asked
// about, as Decide gave it to them.
func (e *evaluator) inputs(ctx context.Context, docs []document) ([]*policy.Input, error) {
	inputs := []*policy.Input{}
	for i, d := range docs {
		r, err := e.evaluate(ctx, d, i)
		if err != nil {
			return nil, err
		}
		if r.input != nil {
			inputs = append(inputs, e.engine.Current().Document(r.input))
		}
	}
	return inputs, nil
}

// newEngine compiles policies, or the default policy when there are none.
func newEngine(ctx context.Context, policies []v1alpha1.PipeAccessPolicy) (*policy.Engine, error) {
	engine, err := policy.NewEngine(ctx, policy.Options{Namer: webhookFlag})
	if err != nil {
		return nil, fmt.Errorf("internal error: %w", err)
	}
	if len(policies) == 0 {
		return engine, nil
	}
	if _, err := engine.Load(ctx, policies); err != nil {
		return nil, badInput("invalid policy: %v", err)
	}
	return engine, nil
}

// policiesFrom decodes PipeAccessPolicies, strictly: an unknown field is an
// error, so a misspelt allowance never silently widens nothing. what names
// where policies come from in the message for anything else.
func policiesFrom(docs []document, what string) ([]v1alpha1.PipeAccessPolicy, error) {
	var pols []v1alpha1.PipeAccessPolicy
	for _, d := range docs {
		if d.skip != "" {
			return nil, badInput("%s: %s; %s takes only PipeAccessPolicy objects", d.source, d.skip, what)
		}
		if d.meta.Kind != "PipeAccessPolicy" || d.meta.APIVersion != v1alpha1.GroupVersion.String() {
			return nil, badInput("%s: %s %q is not a PipeAccessPolicy (apiVersion %s); %s takes only PipeAccessPolicy objects", d.source, d.meta.Kind, d.meta.Metadata.Name, v1alpha1.GroupVersion, what)
		}
		var p v1alpha1.PipeAccessPolicy
		strictErrs, err := kjson.UnmarshalStrict(d.raw, &p)
		if err == nil && len(strictErrs) > 0 {
			err = errors.Join(strictErrs...)
		}
		if err != nil {
			return nil, badInput("%s: invalid PipeAccessPolicy %q: %v", d.source, d.meta.Metadata.Name, err)
		}
		if p.Name == "" {
			return nil, badInput("%s: PipeAccessPolicy has no metadata.name", d.source)
		}
		pols = append(pols, p)
	}
	return pols, nil
}
