package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// grants lets the users in the set grant allowances.
type grants map[string]bool

func (g grants) MayGrant(_ context.Context, u authnv1.UserInfo) (bool, string, error) {
	if u.Username == "broken" {
		return false, "", errors.New("authorizer unavailable")
	}
	return g[u.Username], "", nil
}

func namespaceRequest(t *testing.T, user string, oldLabels, newLabels map[string]string) admission.Request {
	op := admissionv1.Update
	if oldLabels == nil {
		op = admissionv1.Create
	}
	req := request(t, op, metav1.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "team-a",
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: newLabels}})
	req.UserInfo = authnv1.UserInfo{Username: user}
	if oldLabels != nil {
		req.OldObject = runtime.RawExtension{Raw: mustJSON(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: oldLabels}})}
	}
	return req
}

// subresource sends req as an update of a Namespace subresource.
func subresource(req admission.Request, name string) admission.Request {
	req.SubResource = name
	return req
}

func TestNamespaceAllowanceGuard(t *testing.T) {
	e, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A second policy makes "pipeguard.io/storage-tier" an allowance label too.
	csiProxy := policy.DefaultPolicy()
	csiProxy.Name = "csi-proxy"
	_, err = e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{
		csiProxy,
		{ObjectMeta: metav1.ObjectMeta{Name: "tiers"}, Spec: v1alpha1.PipeAccessPolicySpec{Pipes: []string{"csi-proxy-*"},
			Allow: v1alpha1.Allowances{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "pipeguard.io/storage-tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"system"}}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := webhook.NewHandler(webhook.Options{Engine: e, Namespaces: testNamespaces, Grants: grants{"admin": true}})
	on := map[string]string{policy.AllowLabel: "true"}
	cases := map[string]struct {
		req  admission.Request
		want want
	}{
		"user adds the label": {namespaceRequest(t, "alice", map[string]string{}, on),
			denied(`[namespace-allowance] user "alice" may not add, change or remove label pipeguard.io/allow-csi-proxy on namespace "team-a": such labels grant the namespace's pods access to protected host pipes, now or once a policy reads them; ask a cluster admin, or get the "grant" verb on pipeaccesspolicies.pipeguard.io (ClusterRole pipeguard-allowance-granter)`)},
		"user creates a namespace with the label": {namespaceRequest(t, "alice", nil, on), denied(`user "alice" may not add, change or remove label pipeguard.io/allow-csi-proxy`)},
		"a user name with hidden characters is escaped": {namespaceRequest(t, "al\u3164i\u2028ce", map[string]string{}, on),
			denied("[namespace-allowance] user \"al\uFFFDi\\u2028ce\" may not add, change or remove label pipeguard.io/allow-csi-proxy")},
		"user removes the label":        {namespaceRequest(t, "alice", on, map[string]string{}), denied(`label pipeguard.io/allow-csi-proxy`)},
		"user changes a selector label": {namespaceRequest(t, "alice", nil, map[string]string{"pipeguard.io/storage-tier": "system"}), denied(`label pipeguard.io/storage-tier on namespace "team-a"`)},
		"user adds the label through namespaces/status": {subresource(namespaceRequest(t, "alice", map[string]string{}, on), "status"),
			denied(`[namespace-allowance] user "alice" may not add, change or remove label pipeguard.io/allow-csi-proxy on namespace "team-a"`)},
		"user adds the label through namespaces/finalize": {subresource(namespaceRequest(t, "alice", map[string]string{}, on), "finalize"),
			denied(`[namespace-allowance] user "alice" may not add, change or remove label pipeguard.io/allow-csi-proxy on namespace "team-a"`)},
		"status update leaving the labels alone": {subresource(namespaceRequest(t, "alice", on, on), "status"), allowed},
		"user sets a pipeguard.io label no policy reads": {namespaceRequest(t, "alice", map[string]string{}, map[string]string{"pipeguard.io/tier": "gold"}),
			denied(`[namespace-allowance] user "alice" may not add, change or remove label pipeguard.io/tier on namespace "team-a"`)},
		"user sets a label under a pipeguard.io subdomain": {namespaceRequest(t, "alice", nil, map[string]string{"team.pipeguard.io/tier": "gold", "env": "prod"}),
			denied(`label team.pipeguard.io/tier on namespace "team-a"`)},
		"user removes a pipeguard.io label no policy reads": {namespaceRequest(t, "alice", map[string]string{"pipeguard.io/tier": "gold"}, map[string]string{}),
			denied(`label pipeguard.io/tier on namespace "team-a"`)},
		"user changes several guarded labels at once": {namespaceRequest(t, "alice", map[string]string{"pipeguard.io/a": "1"}, map[string]string{"pipeguard.io/a": "2", policy.AllowLabel: "true"}),
			denied(`label pipeguard.io/a, pipeguard.io/allow-csi-proxy on namespace "team-a"`)},
		"user sets look-alike keys outside the domain": {namespaceRequest(t, "alice", map[string]string{}, map[string]string{"pipeguard.io.example.com/tier": "gold", "notpipeguard.io/tier": "gold", "tier": "gold", "env": "prod"}), allowed},
		"user changes other labels":                    {namespaceRequest(t, "alice", on, map[string]string{policy.AllowLabel: "true", "team": "b"}), allowed},
		"admin adds the label":                         {namespaceRequest(t, "admin", map[string]string{}, on), allowed},
		"authorizer failure rejects": {namespaceRequest(t, "broken", map[string]string{}, on),
			want{code: http.StatusInternalServerError, message: `internal error: cannot check whether "broken" may change the allowance labels of namespace "team-a": authorizer unavailable`}},
		"undecodable namespace": {func() admission.Request {
			req := namespaceRequest(t, "alice", map[string]string{}, on)
			req.Object.Raw = []byte(`{"metadata":{"labels":7}}`)
			return req
		}(), want{code: http.StatusBadRequest, message: "cannot decode request.object as a Namespace: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type map[string]string"}},
		"undecodable old namespace": {func() admission.Request {
			req := namespaceRequest(t, "alice", map[string]string{}, on)
			req.OldObject.Raw = []byte(`{"metadata":{"labels":7}}`)
			return req
		}(), want{code: http.StatusBadRequest, message: "cannot decode request.oldObject as a Namespace: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type map[string]string"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, h.Handle(context.Background(), tc.req), tc.want)
		})
	}
}
