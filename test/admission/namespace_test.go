package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// labelKeys are namespace label keys, guarded or not, and look-alikes of
// the guarded ones.
var labelKeys = []string{
	policy.AllowLabel, "pipeguard.io/x", "pipeguard.io/tier", "a.pipeguard.io/x", "storage.pipeguard.io/tier",
	"a.b.pipeguard.io/x", "pipeguard.io.evil/x", "pipeguard.io.example.com/tier", "xpipeguard.io/x",
	"notpipeguard.io/tier", "pipeguardxio/x", "a.pipeguardxio/x", "pipeguard-io/x", "pipeguard/x",
	"example.com/pipeguard.io", "pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/warn",
	policy.NameLabel, "kubernetes.io/x", "tier", "team", "pipeguard.io", "env",
}

// namespaceChange is a change of a Namespace's labels: old nil is a CREATE.
type namespaceChange struct {
	what     string
	old, new map[string]string
}

// changesOf are the ways key can change, or not, beside an ordinary label.
func changesOf(key string) []namespaceChange {
	base := map[string]string{policy.NameLabel: "team-a", "env": "prod"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	return []namespaceChange{
		{"create with " + key, nil, with(base, key, "true")},
		{"add " + key, base, with(base, key, "true")},
		{"add " + key + " to a namespace without labels", map[string]string{}, map[string]string{key: "true"}},
		{"remove " + key, with(base, key, "true"), base},
		{"remove " + key + ", the only label", map[string]string{key: "true"}, map[string]string{}},
		{"change the value of " + key, with(base, key, "false"), with(base, key, "true")},
		{"leave " + key + " alone", with(base, key, "true"), with(base, key, "true", "other", "x")},
		{"set " + key + " to the empty value", with(base, key, "x"), with(base, key, "")},
	}
}

// granterAuthorizer lets "admin" grant and no one else, as RBAC would
// with the pipeguard-allowance-granter ClusterRole bound to admin.
var granterAuthorizer = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "admin" && a.GetVerb() == webhook.GrantVerb && a.GetResource() == "pipeaccesspolicies" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

// grants is what the webhook asks: the same answer as granterAuthorizer.
type grants struct{}

func (grants) MayGrant(_ context.Context, u authnv1.UserInfo) (bool, string, error) {
	return u.Username == "admin", "", nil
}

func namespaceObject(labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "team-a"}}}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

// sendsNamespace reports whether the API server would call the webhook for
// the change, made by username through subresource ("" for the Namespace).
func (f *filter) sendsNamespace(t *testing.T, c namespaceChange, subresource, username string) bool {
	t.Helper()
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	op, opts := admission.Update, runtime.Object(&metav1.UpdateOptions{})
	var old runtime.Object
	if c.old == nil {
		op, opts = admission.Create, &metav1.CreateOptions{}
	} else {
		old = namespaceObject(c.old)
	}
	obj := namespaceObject(c.new)
	attr := admission.NewAttributesRecord(obj, old, gvk, "", "team-a", gvr, subresource, op, opts, false, &user.DefaultInfo{Name: username})
	va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(obj)}
	if old != nil {
		va.VersionedOldObject = admission.NewLazyObject(old)
	}
	r := f.matchers[f.hookFor(t, gvr)].Match(context.Background(), va, nil, granterAuthorizer)
	if r.Error != nil {
		t.Fatalf("%s through %q: matchConditions failed: %v", c.what, subresource, r.Error)
	}
	return r.Matches
}

// guardRefuses reports whether the webhook's namespace guard refuses the
// change when username makes it.
func guardRefuses(t *testing.T, h *webhook.Handler, c namespaceChange, subresource, username string) bool {
	t.Helper()
	raw := func(labels map[string]string) []byte {
		b, err := json.Marshal(&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: labels}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := ctrladmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "uid", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "team-a",
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "namespaces"}, SubResource: subresource,
		Operation: admissionv1.Update, UserInfo: authnv1.UserInfo{Username: username},
		Object: runtime.RawExtension{Raw: raw(c.new)},
	}}
	if c.old == nil {
		req.Operation = admissionv1.Create
	} else {
		req.OldObject = runtime.RawExtension{Raw: raw(c.old)}
	}
	resp := h.Handle(context.Background(), req)
	if !resp.Allowed && (resp.Result == nil || resp.Result.Code != 403) {
		t.Fatalf("%s: the guard failed: %+v", c.what, resp.Result)
	}
	return !resp.Allowed
}

// TestNamespaceFilterIsTheGuard: for every key of the corpus, every way
// it can change and every subresource the Namespace webhook covers, the
// API server calls the webhook for a user who may not grant exactly when
// the webhook's guard refuses the change, and never for a granter. So an
// outage refuses only what the guard would, and a change of any other
// label (Pod Security's included) is admitted.
func TestNamespaceFilterIsTheGuard(t *testing.T) {
	f := loadFilter(t)
	e, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A policy that selects on a subdomain key: the guard guards what the
	// policies read as well as the whole domain.
	tiers := v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "tiers"}, Spec: v1alpha1.PipeAccessPolicySpec{Pipes: []string{"vendor-*"},
		Allow: v1alpha1.Allowances{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"storage.pipeguard.io/tier": "gold"}}}}}
	if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{tiers}); err != nil {
		t.Fatal(err)
	}
	h := webhook.NewHandler(webhook.Options{Engine: e, Grants: grants{}})
	refused, admitted := 0, 0
	for _, key := range labelKeys {
		for _, c := range changesOf(key) {
			for _, sub := range []string{"", "status", "finalize"} {
				what := fmt.Sprintf("%s through %q", c.what, sub)
				refuses := guardRefuses(t, h, c, sub, "alice")
				if sends := f.sendsNamespace(t, c, sub, "alice"); sends != refuses {
					t.Errorf("%s by a user who may not grant: the API server sends it %v, the guard refuses it %v", what, sends, refuses)
				}
				if refuses != policy.GuardedLabel(key) && c.old != nil && c.old[key] != c.new[key] {
					t.Errorf("%s: the guard refuses it %v, policy.GuardedLabel(%q) = %v", what, refuses, key, policy.GuardedLabel(key))
				}
				if f.sendsNamespace(t, c, sub, "admin") {
					t.Errorf("%s by a granter is sent to the webhook", what)
				}
				if refuses {
					refused++
				} else {
					admitted++
				}
			}
		}
	}
	// Neither answer alone would make the comparison mean anything.
	if refused < 100 || admitted < 100 {
		t.Fatalf("%d refused and %d admitted changes in the corpus", refused, admitted)
	}
}

// TestNamespaceWithOnlyTheNameLabelSkipsTheWebhook: the API server labels
// every Namespace with its name; creating one needs no webhook.
func TestNamespaceWithOnlyTheNameLabelSkipsTheWebhook(t *testing.T) {
	f := loadFilter(t)
	for _, labels := range []map[string]string{nil, {}, {policy.NameLabel: "team-a"}} {
		if f.sendsNamespace(t, namespaceChange{what: fmt.Sprintf("create with %v", labels), new: labels}, "", "alice") {
			t.Errorf("creating a Namespace with labels %v goes to the webhook", labels)
		}
	}
}

// TestNamespaceFilterWithinBudget: a Namespace with as many labels as the
// API server takes (256 KiB of keys and values) is evaluated within the
// API server's CEL budget for matchConditions, on update and on create,
// so it never fails closed for its size.
func TestNamespaceFilterWithinBudget(t *testing.T) {
	f := loadFilter(t)
	labels := map[string]string{}
	size := 0
	for i := 0; size < 256<<10-200; i++ {
		k := fmt.Sprintf("example-%04d.team.example.com/%s", i, strings.Repeat("k", 40))
		v := strings.Repeat("v", 63)
		labels[k] = v
		size += len(k) + len(v)
	}
	changed := map[string]string{}
	for k, v := range labels {
		changed[k] = v
	}
	changed["pod-security.kubernetes.io/enforce"] = "baseline"
	for _, c := range []namespaceChange{
		{"create with many labels", nil, labels},
		{"update of one of many labels", labels, changed},
		{"removal of many labels", labels, map[string]string{}},
	} {
		for _, sub := range []string{"", "status"} {
			if f.sendsNamespace(t, c, sub, "alice") {
				t.Errorf("%s through %q goes to the webhook", c.what, sub)
			}
		}
	}
}
