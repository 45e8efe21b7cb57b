package webhook_test

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// typed is the Request Decide takes for an AdmissionReview, built here
// field by field so that a translation Handle drops shows.
func typed(req admission.Request) webhook.Request {
	return webhook.Request{
		UID:      string(req.UID),
		Kind:     schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind},
		Resource: req.Resource.Resource, SubResource: req.SubResource,
		Namespace: req.Namespace, Name: req.Name, Operation: req.Operation,
		User: req.UserInfo, DryRun: req.DryRun != nil && *req.DryRun,
		Object: req.Object.Raw, OldObject: req.OldObject.Raw,
	}
}

// TestHandleOnlyTranslates: for requests of every outcome, the response
// Handle sends says exactly what Decide decided: a deny is 403 with the
// denials one per line, warnings are the warn messages, a decision of
// rego's is named in the audit annotations, and Decide's errors are 400
// for the requester's and 500 for pipeguard's own.
func TestHandleOnlyTranslates(t *testing.T) {
	warn := v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "rollout"},
		Spec: v1alpha1.PipeAccessPolicySpec{Pipes: []string{"csi-proxy-disk-*"}, EnforcementAction: v1alpha1.Warn}}
	dry := v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "trial"},
		Spec: v1alpha1.PipeAccessPolicySpec{Pipes: []string{"csi-proxy-smb-*"}, EnforcementAction: v1alpha1.DryRun}}
	engine, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Load(context.Background(), []v1alpha1.PipeAccessPolicy{warn, dry}); err != nil {
		t.Fatal(err)
	}
	h := webhook.NewHandler(webhook.Options{Engine: engine, Namespaces: testNamespaces, Grants: grants{}})
	failing := webhook.NewHandler(webhook.Options{Engine: failingEvaluator{}, Namespaces: testNamespaces})
	smb := `\\.\pipe\csi-proxy-smb-v1`
	twoPipes := pod(diskPipe, func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "smb", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: smb}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "smb", MountPath: "/smb"})
	})
	deny := v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "strict"},
		Spec: v1alpha1.PipeAccessPolicySpec{Pipes: []string{"csi-proxy-*"}}}
	strict := newHandler(t, deny)
	broken := podRequest(t, pod(diskPipe))
	broken.Object.Raw = []byte(`{"kind":"Pod","spec":{"volumes":"hostPath"}}`)

	for name, tc := range map[string]struct {
		h       *webhook.Handler
		req     admission.Request
		verdict policy.Verdict
	}{
		"deny":                       {strict, podRequest(t, twoPipes), policy.Deny},
		"warn":                       {h, podRequest(t, pod(diskPipe)), policy.Warn},
		"dryrun":                     {h, podRequest(t, pod(smb)), policy.DryRun},
		"warn and dryrun":            {h, podRequest(t, twoPipes), policy.Warn},
		"allow: no pipe":             {h, podRequest(t, pod(`C:\data`)), policy.Allow},
		"allow: not reviewed":        {h, request(t, admissionv1.Create, metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "team-a", "c", map[string]string{"hostPath": diskPipe}), policy.Allow},
		"allow: delete":              {h, request(t, admissionv1.Delete, podKind, "team-a", "web", pod(diskPipe)), policy.Allow},
		"namespace label self-grant": {h, namespaceRequest(t, "mallory", map[string]string{}, map[string]string{policy.AllowLabel: "true"}), policy.Deny},
		"bad request":                {h, broken, ""},
		"internal error":             {failing, podRequest(t, pod(diskPipe)), ""},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := tc.h.Decide(context.Background(), typed(tc.req))
			if out.Verdict != tc.verdict {
				t.Fatalf("Decide: verdict %q (error %v), want %q", out.Verdict, err, tc.verdict)
			}
			resp := tc.h.Handle(context.Background(), tc.req)
			if resp.UID != tc.req.UID {
				t.Errorf("response UID %q, want the request's %q", resp.UID, tc.req.UID)
			}
			if err != nil {
				code := int32(http.StatusInternalServerError)
				if webhook.IsBadRequest(err) {
					code = http.StatusBadRequest
				}
				if resp.Allowed || resp.Result == nil || resp.Result.Code != code || resp.Result.Message != err.Error() {
					t.Fatalf("Decide failed with %v; Handle answered %+v, want code %d with that message", err, resp.Result, code)
				}
				return
			}
			if resp.Allowed != (out.Verdict != policy.Deny) {
				t.Fatalf("verdict %s, but Handle answered allowed=%v", out.Verdict, resp.Allowed)
			}
			if out.Verdict == policy.Deny && (resp.Result.Code != http.StatusForbidden || resp.Result.Message != strings.Join(out.Denials, "\n") || len(out.Denials) == 0) {
				t.Errorf("deny: response %+v, want 403 with the denials %q", resp.Result, out.Denials)
			}
			if !reflect.DeepEqual(resp.Warnings, out.Warnings) {
				t.Errorf("warnings %q, want Decide's %q", resp.Warnings, out.Warnings)
			}
			if out.Verdict == policy.Warn && len(out.Warnings) == 0 {
				t.Errorf("verdict warn without a warning")
			}
			var want map[string]string
			if out.Decision != nil {
				want = map[string]string{"decision": string(out.Verdict), "policy-generation": strconv.FormatInt(out.Decision.Generation, 10)}
			}
			if !reflect.DeepEqual(resp.AuditAnnotations, want) {
				t.Errorf("audit annotations %v, want %v", resp.AuditAnnotations, want)
			}
		})
	}
}

// TestDecideFailsClosed: when Decide cannot decide, its Outcome is not an
// allow, whatever the caller does with the error, and the error says whose
// fault it is.
func TestDecideFailsClosed(t *testing.T) {
	req := typed(podRequest(t, pod(diskPipe)))
	for name, tc := range map[string]struct {
		h   *webhook.Handler
		req webhook.Request
		bad bool
	}{
		"evaluation error": {webhook.NewHandler(webhook.Options{Engine: failingEvaluator{}, Namespaces: testNamespaces}), req, false},
		"panic":            {webhook.NewHandler(webhook.Options{Engine: failingEvaluator{panic: true}, Namespaces: testNamespaces}), req, false},
		"no object":        {newHandler(t), webhook.Request{Kind: req.Kind, Operation: admissionv1.Create, Name: "web"}, true},
		"truncated object": {newHandler(t), func() webhook.Request { r := req; r.Object = r.Object[:len(r.Object)/2]; return r }(), true},
		"grant check down": {webhook.NewHandler(webhook.Options{Engine: failingEvaluator{}, Namespaces: testNamespaces, Grants: grants{}}),
			typed(namespaceRequest(t, "broken", map[string]string{}, map[string]string{policy.AllowLabel: "true"})), false},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := tc.h.Decide(context.Background(), tc.req)
			if err == nil {
				t.Fatalf("decided %q, want an error", out.Verdict)
			}
			if out.Verdict == policy.Allow || out.Decision != nil {
				t.Errorf("failed decision carries verdict %q and decision %v; it must carry nothing a caller could take for an allow", out.Verdict, out.Decision)
			}
			if webhook.IsBadRequest(err) != tc.bad {
				t.Errorf("IsBadRequest(%v) = %v, want %v", err, !tc.bad, tc.bad)
			}
		})
	}
}

// TestDecideUserIsTheRequests: the namespace guard asks about the user the
// Request names, not one of Decide's own.
func TestDecideUserIsTheRequests(t *testing.T) {
	h := webhook.NewHandler(webhook.Options{Engine: failingEvaluator{}, Namespaces: testNamespaces, Grants: grants{"admin": true}})
	req := typed(namespaceRequest(t, "admin", map[string]string{}, map[string]string{policy.AllowLabel: "true"}))
	if out, err := h.Decide(context.Background(), req); err != nil || out.Verdict != policy.Allow {
		t.Fatalf("admin: %q, %v; want allow", out.Verdict, err)
	}
	req.User = authnv1.UserInfo{Username: "mallory"}
	out, err := h.Decide(context.Background(), req)
	if err != nil || out.Verdict != policy.Deny || len(out.Denials) != 1 || !strings.HasPrefix(out.Denials[0], `[namespace-allowance] user "mallory" may not add, change or remove label `+policy.AllowLabel) {
		t.Fatalf("mallory: %q %q, %v; want the namespace-allowance denial", out.Verdict, out.Denials, err)
	}
}
