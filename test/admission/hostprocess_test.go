package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/internal/testing/webhookconfig"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// routedFilter compiles the shipped configuration with the condition of a
// routed webhook set as the leader sets it.
func routedFilter(t *testing.T, webhook, condition string, on bool) *filter {
	t.Helper()
	mustKinds(t)
	cfg, err := webhookconfig.Load(manifests)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		for j := range w.MatchConditions {
			if w.Name == webhook && w.MatchConditions[j].Name == condition {
				w.MatchConditions[j].Expression = fmt.Sprint(on)
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("%s has no condition %s in webhook %s", manifests, condition, webhook)
	}
	f, err := compileFilter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func hostProcessFilter(t *testing.T, withheld bool) *filter {
	return routedFilter(t, controller.HostProcessWebhook, controller.HostProcessCondition, withheld)
}

// TestClaimsRouting: while a protected PersistentVolume exists, every
// object of every pod-bearing kind with a persistentVolumeClaim volume goes
// to the webhook, and nothing else does for it; while none exists, nothing
// does.
func TestClaimsRouting(t *testing.T) {
	claim := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	empty := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	cases := map[string]struct {
		spec  corev1.PodSpec
		claim bool
	}{
		"a claim":               {corev1.PodSpec{Volumes: []corev1.Volume{claim}, Containers: []corev1.Container{{Name: "c"}}}, true},
		"a claim beside others": {corev1.PodSpec{Volumes: []corev1.Volume{empty, claim}, Containers: []corev1.Container{{Name: "c"}}}, true},
		"no claim":              {corev1.PodSpec{Volumes: []corev1.Volume{empty}, Containers: []corev1.Container{{Name: "c"}}}, false},
		"no volume":             {corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, false},
	}
	on := routedFilter(t, controller.ClaimsWebhook, controller.ClaimsCondition, true)
	off := routedFilter(t, controller.ClaimsWebhook, controller.ClaimsCondition, false)
	for _, k := range podKinds {
		if !slices.ContainsFunc(on.cfg.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
			return w.Name == controller.ClaimsWebhook && selects(w, k)
		}) {
			t.Errorf("webhook %s does not review %s", controller.ClaimsWebhook, k.gvk.Kind)
			continue
		}
		for name, tc := range cases {
			obj := k.wrap(tc.spec)
			if got := on.sendsVia(t, controller.ClaimsWebhook, k, obj); got != tc.claim {
				t.Errorf("%s, %s, a protected PersistentVolume exists: sent = %v, want %v", k.gvk.Kind, name, got, tc.claim)
			}
			if off.sendsVia(t, controller.ClaimsWebhook, k, obj) {
				t.Errorf("%s, %s, no protected PersistentVolume: sent to the webhook, want skipped", k.gvk.Kind, name)
			}
		}
	}
}

// TestHostProcessRouting: while a policy withholds the HostProcess
// allowance, every object of every pod-bearing kind that runs a HostProcess
// container (pod or container level, any container kind) goes to the
// webhook; objects without one never go there for it, and while no policy
// withholds the allowance nothing does.
func TestHostProcessRouting(t *testing.T) {
	yes, no := true, false
	hp := func(v *bool) *corev1.WindowsSecurityContextOptions {
		return &corev1.WindowsSecurityContextOptions{HostProcess: v}
	}
	container := func(v *bool) corev1.Container {
		return corev1.Container{Name: "c", Image: "c", SecurityContext: &corev1.SecurityContext{WindowsOptions: hp(v)}}
	}
	cases := map[string]struct {
		spec corev1.PodSpec
		// hostProcess: some container is HostProcess, as the webhook's facts
		// read it, so the webhook must see the object.
		hostProcess bool
	}{
		"pod level":                {corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{WindowsOptions: hp(&yes)}, Containers: []corev1.Container{{Name: "c"}}}, true},
		"container level":          {corev1.PodSpec{Containers: []corev1.Container{container(&yes)}}, true},
		"init container":           {corev1.PodSpec{InitContainers: []corev1.Container{container(&yes)}, Containers: []corev1.Container{{Name: "c"}}}, true},
		"ephemeral container":      {corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}, EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", SecurityContext: &corev1.SecurityContext{WindowsOptions: hp(&yes)}}}}}, true},
		"second of two containers": {corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, container(&yes)}}, true},
		"pod level false":          {corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{WindowsOptions: hp(&no)}, Containers: []corev1.Container{container(&no)}}, false},
		"windows options without hostProcess": {corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr("ContainerUser")}},
			Containers: []corev1.Container{{Name: "c"}}}, false},
		"plain": {corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, false},
	}
	on, off := hostProcessFilter(t, true), hostProcessFilter(t, false)
	decide := withholdingHandler(t)
	for _, k := range podKinds {
		if !slices.ContainsFunc(on.cfg.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
			return w.Name == controller.HostProcessWebhook && selects(w, k)
		}) {
			t.Errorf("webhook %s does not review %s", controller.HostProcessWebhook, k.gvk.Kind)
			continue
		}
		for name, tc := range cases {
			obj := k.wrap(tc.spec)
			if got := decide(t, k, obj); got != tc.hostProcess {
				t.Fatalf("%s, %s: the webhook decides it as HostProcess = %v, the case says %v", k.gvk.Kind, name, got, tc.hostProcess)
			}
			if got := on.sendsVia(t, controller.HostProcessWebhook, k, obj); got != tc.hostProcess {
				t.Errorf("%s, %s, a policy withholds the allowance: sent = %v, want %v", k.gvk.Kind, name, got, tc.hostProcess)
			}
			if off.sendsVia(t, controller.HostProcessWebhook, k, obj) {
				t.Errorf("%s, %s, no policy withholds the allowance: sent to the webhook, want skipped", k.gvk.Kind, name)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// selects reports whether w's rules select k.
func selects(w admissionregistrationv1.ValidatingWebhook, k kind) bool {
	for _, r := range w.Rules {
		if slices.Contains(r.APIGroups, k.gvr.Group) && slices.Contains(r.APIVersions, k.gvr.Version) && slices.Contains(r.Resources, k.gvr.Resource) {
			return true
		}
	}
	return false
}

// withholdingHandler returns whether the webhook, under a policy that
// withholds the HostProcess allowance, decides obj as running a HostProcess
// container: the facts the routing condition must never miss.
func withholdingHandler(t *testing.T) func(*testing.T, kind, any) bool {
	e, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	no := false
	if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "strict"},
		Spec: v1alpha1.PipeAccessPolicySpec{Pipes: []string{"*"}, EnforcementAction: v1alpha1.Deny, Allow: v1alpha1.Allowances{HostProcess: &no}}}}); err != nil {
		t.Fatal(err)
	}
	h := webhook.NewHandler(webhook.Options{Engine: e, Namespaces: webhook.StaticNamespaces{}})
	return func(t *testing.T, k kind, obj any) bool {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Decide(context.Background(), webhook.Request{Kind: k.gvk, Namespace: "team-a", Name: "x", Operation: "CREATE", Object: raw})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(strings.Join(out.Denials, "\n"), "[hostprocess-pipe-access]")
	}
}
