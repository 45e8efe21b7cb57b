package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
)

// storageKey is an allowance label that only a policy's namespaceSelector
// expression reads.
const storageKey = "pipeguard.io/storage"

// refusal says who stops an attempt: RBAC before admission, or the webhook.
type refusal string

const (
	byRBAC    refusal = "RBAC"
	byWebhook refusal = "webhook"
)

// labelPath is one way of writing a Namespace's labels.
type labelPath struct {
	name string
	// subresource is "", "status" or "finalize": RBAC checks it, so it
	// decides which users get as far as the webhook.
	subresource string
	// create is a Namespace CREATE rather than a write to an existing one.
	create bool
	// write sets the namespace's labels to want (nil value: remove the key).
	write func(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace, want map[string]*string) error
}

func labelPaths() []labelPath {
	mergeBody := func(want map[string]*string) []byte {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": want}})
		return body
	}
	jsonPatch := func(ns *corev1.Namespace, want map[string]*string) []byte {
		var ops []map[string]any
		for k, v := range want {
			path := "/metadata/labels/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			_, exists := ns.Labels[k]
			switch {
			case v == nil:
				ops = append(ops, map[string]any{"op": "remove", "path": path})
			case exists:
				ops = append(ops, map[string]any{"op": "replace", "path": path, "value": *v})
			default:
				ops = append(ops, map[string]any{"op": "add", "path": path, "value": *v})
			}
		}
		body, _ := json.Marshal(ops)
		return body
	}
	applyBody := func(ns *corev1.Namespace, want map[string]*string) []byte {
		labels := map[string]string{}
		for k, v := range want {
			labels[k] = *v
		}
		body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns.Name, "labels": labels}})
		return body
	}
	withLabels := func(ns *corev1.Namespace, want map[string]*string) *corev1.Namespace {
		out := ns.DeepCopy()
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		for k, v := range want {
			if v == nil {
				delete(out.Labels, k)
			} else {
				out.Labels[k] = *v
			}
		}
		return out
	}
	patch := func(pt types.PatchType, sub string, body func(*corev1.Namespace, map[string]*string) []byte) func(context.Context, kubernetes.Interface, *corev1.Namespace, map[string]*string) error {
		return func(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace, want map[string]*string) error {
			opts := metav1.PatchOptions{}
			if pt == types.ApplyPatchType {
				force := true
				opts = metav1.PatchOptions{FieldManager: "label-thief", Force: &force}
			}
			var subs []string
			if sub != "" {
				subs = []string{sub}
			}
			_, err := cs.CoreV1().Namespaces().Patch(ctx, ns.Name, pt, body(ns, want), opts, subs...)
			return err
		}
	}
	merge := func(_ *corev1.Namespace, want map[string]*string) []byte { return mergeBody(want) }
	return []labelPath{
		{name: "PUT", write: func(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace, want map[string]*string) error {
			_, err := cs.CoreV1().Namespaces().Update(ctx, withLabels(ns, want), metav1.UpdateOptions{})
			return err
		}},
		{name: "merge patch", write: patch(types.MergePatchType, "", merge)},
		{name: "JSON patch", write: patch(types.JSONPatchType, "", jsonPatch)},
		{name: "strategic merge patch", write: patch(types.StrategicMergePatchType, "", merge)},
		{name: "server-side apply", write: patch(types.ApplyPatchType, "", applyBody)},
		{name: "PUT status", subresource: "status", write: func(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace, want map[string]*string) error {
			_, err := cs.CoreV1().Namespaces().UpdateStatus(ctx, withLabels(ns, want), metav1.UpdateOptions{})
			return err
		}},
		{name: "merge patch status", subresource: "status", write: patch(types.MergePatchType, "status", merge)},
		{name: "JSON patch status", subresource: "status", write: patch(types.JSONPatchType, "status", jsonPatch)},
		{name: "server-side apply status", subresource: "status", write: patch(types.ApplyPatchType, "status", applyBody)},
		{name: "PUT finalize", subresource: "finalize", write: func(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace, want map[string]*string) error {
			_, err := cs.CoreV1().Namespaces().Finalize(ctx, withLabels(ns, want), metav1.UpdateOptions{})
			return err
		}},
		{name: "CREATE", create: true, write: func(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace, want map[string]*string) error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, withLabels(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}, want), metav1.CreateOptions{})
			return err
		}},
	}
}

func ptr(s string) *string { return &s }

// namespaceAllowanceGuard tries every way of writing a Namespace's labels,
// as users RBAC lets edit a namespace in different ways, and checks that
// none of them adds, changes or removes an allowance label. It runs inside
// TestWebhookOnControlPlane: one webhook per test process.
func namespaceAllowanceGuard(t *testing.T, c *cluster) {
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(c.env.Config)
	if err != nil {
		t.Fatal(err)
	}

	// A policy whose allowance is a namespaceSelector expression makes
	// pipeguard.io/storage an allowance label beside the default one.
	c.mustCreate(t, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "storage-tier"}, Spec: v1alpha1.PipeAccessPolicySpec{
		Pipes: []string{"docker_engine"},
		Allow: v1alpha1.Allowances{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: storageKey, Operator: metav1.LabelSelectorOpIn, Values: []string{"system"}}}}},
	}})
	waitReady(t, c, "storage-tier", metav1.ConditionTrue, "")
	t.Cleanup(func() {
		if err := c.client.Delete(ctx, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "storage-tier"}}); err != nil {
			t.Error(err)
		}
	})

	// The users. None is granted the "grant" verb but the granter.
	c.mustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "everything", Namespace: "team-a"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}})
	c.mustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "wanda-everything", Namespace: "team-a"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "everything"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "wanda", APIGroup: rbacv1.GroupName}}})
	c.mustCreate(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-status-finalize"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces/status", "namespaces/finalize"}, Verbs: []string{"get", "update", "patch"}},
		}})
	c.mustCreate(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-editor"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "create", "update", "patch"}}}})
	granter := shippedGranterRole(t)
	c.mustCreate(t, granter)
	for user, role := range map[string]string{"sam": "namespace-status-finalize", "edna": "namespace-editor", "greta": "namespace-editor"} {
		c.mustCreate(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user, APIGroup: rbacv1.GroupName}}})
	}
	c.mustCreate(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "greta-granter"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: granter.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "greta", APIGroup: rbacv1.GroupName}}})
	users := map[string]kubernetes.Interface{}
	for _, name := range []string{"wanda", "sam", "edna", "greta"} {
		if users[name], err = kubernetes.NewForConfig(c.env.UserConfig(t, name)); err != nil {
			t.Fatal(err)
		}
	}

	// Which refusal each user meets on each kind of path: RBAC stops what
	// it does not grant, the webhook everything RBAC lets through.
	expect := func(user string, p labelPath) refusal {
		switch {
		case p.create:
			if user == "edna" {
				return byWebhook
			}
			return byRBAC // a Role inside team-a cannot create namespaces
		case user == "wanda":
			return byWebhook // her Role covers team-a and all its subresources
		case user == "sam" && p.subresource != "":
			return byWebhook
		case user == "edna" && p.subresource == "":
			return byWebhook
		}
		return byRBAC
	}

	// setLabels puts team-a's allowance labels as the admin wants them.
	setLabels := func(t *testing.T, labels map[string]string) *corev1.Namespace {
		t.Helper()
		ns, err := admin.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		delete(ns.Labels, policy.AllowLabel)
		delete(ns.Labels, storageKey)
		maps.Copy(ns.Labels, labels)
		if ns, err = admin.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	allowance := func(labels map[string]string) map[string]string {
		out := map[string]string{}
		for _, k := range []string{policy.AllowLabel, storageKey} {
			if v, ok := labels[k]; ok {
				out[k] = v
			}
		}
		return out
	}

	changes := []struct {
		name   string
		before map[string]string
		want   map[string]*string
	}{
		{"add the default label", nil, map[string]*string{policy.AllowLabel: ptr("true")}},
		{"add a selector expression's label", nil, map[string]*string{storageKey: ptr("system")}},
		{"change the default label", map[string]string{policy.AllowLabel: "false"}, map[string]*string{policy.AllowLabel: ptr("true")}},
		{"change a selector expression's label", map[string]string{storageKey: "scratch"}, map[string]*string{storageKey: ptr("system")}},
		{"remove the default label", map[string]string{policy.AllowLabel: "true"}, map[string]*string{policy.AllowLabel: nil}},
		{"remove a selector expression's label", map[string]string{storageKey: "system"}, map[string]*string{storageKey: nil}},
	}
	for _, change := range changes {
		t.Run(change.name, func(t *testing.T) {
			ns := setLabels(t, change.before)
			for _, p := range labelPaths() {
				adding := !strings.HasPrefix(change.name, "remove")
				if p.create && !adding {
					continue // a new namespace has no label to change or remove
				}
				if p.name == "server-side apply" || p.name == "server-side apply status" {
					if !adding {
						// Apply removes only fields its manager owns alone;
						// the admin's update owns these.
						continue
					}
				}
				for _, user := range []string{"wanda", "sam", "edna"} {
					target := ns
					if p.create {
						target = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new-" + user}}
					}
					err := p.write(ctx, users[user], target, change.want)
					what := fmt.Sprintf("%s: %s by %s", change.name, p.name, user)
					checkRefusal(t, what, err, expect(user, p), user, changeKey(change.want))

					if p.create {
						if _, err := admin.CoreV1().Namespaces().Get(ctx, target.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
							t.Errorf("%s: namespace %s exists (get: %v)", what, target.Name, err)
						}
						continue
					}
					now, err := admin.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if got, was := allowance(now.Labels), allowance(change.before); !maps.Equal(got, was) {
						t.Fatalf("%s: allowance labels are %v, were %v", what, got, was)
					}
				}
			}
		})
	}

	t.Run("other labels stay the editors' to change", func(t *testing.T) {
		ns := setLabels(t, nil)
		for _, user := range []string{"wanda", "edna"} {
			if err := labelPaths()[1].write(ctx, users[user], ns, map[string]*string{"team": ptr(user)}); err != nil {
				t.Errorf("%s changing an ordinary label: %v", user, err)
			}
		}
	})

	t.Run("a status update that leaves the labels alone is not sent to the webhook", func(t *testing.T) {
		ns := setLabels(t, nil)
		before := c.reviews(t)
		if _, err := admin.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if after := c.reviews(t); after != before {
			t.Errorf("the webhook reviewed %v requests, want none", after-before)
		}
	})

	t.Run("a user bound to pipeguard-allowance-granter may grant", func(t *testing.T) {
		c.mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "granted"}})
		denied(t, c.client.Create(ctx, pipePod("before", "granted"), client.DryRunAll), `namespace "granted" is not allowed`)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "granted"}}
		if err := labelPaths()[1].write(ctx, users["greta"], ns, map[string]*string{policy.AllowLabel: ptr("true")}); err != nil {
			t.Fatalf("the granter could not label the namespace: %v", err)
		}
		// The label is what let wanda's and sam's pods in, had it been saved.
		// The webhook reads labels from its watch of namespaces, which sees
		// the change a moment later; until then the pod is denied.
		var err error
		// Poll under a deadline for the watch to see the label; the pause only spares the CPU.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if err = c.client.Create(ctx, pipePod("after", "granted"), client.DryRunAll); err == nil || !strings.Contains(err.Error(), `namespace "granted" is not allowed`) {
				break
			}
		}
		if err != nil {
			t.Fatalf("a pipe pod in the granted namespace: %v", err)
		}
	})

	t.Run("after all that, a pipe pod in team-a is still denied", func(t *testing.T) {
		denied(t, c.client.Create(ctx, pipePod("after", "team-a"), client.DryRunAll),
			`[protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed`)
	})
}

// checkRefusal asserts that err is the expected refusal of user's attempt
// to change label key.
func checkRefusal(t *testing.T, what string, err error, want refusal, user, key string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted, want a refusal by %s", what, want)
		return
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want a refusal by %s", what, err, want)
		return
	}
	msg := err.Error()
	webhook := fmt.Sprintf(`admission webhook "namespaces.pipeguard.io" denied the request: [namespace-allowance] user %q may not add, change or remove label %s on namespace`, user, key)
	switch {
	case want == byWebhook && !strings.Contains(msg, webhook):
		t.Errorf("%s: %q\nwant the webhook's %q", what, msg, webhook)
	case want == byRBAC && !strings.Contains(msg, fmt.Sprintf(`User %q cannot`, user)):
		t.Errorf("%s: %q\nwant RBAC's refusal", what, msg)
	}
}

func changeKey(want map[string]*string) string {
	for k := range want {
		return k
	}
	return ""
}

// shippedGranterRole reads the ClusterRole that config/rbac ships for
// granting allowances.
func shippedGranterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile("../../../config/rbac/allowance_granter_role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatalf("config/rbac/allowance_granter_role.yaml: %v", err)
	}
	if role.Name != "pipeguard-allowance-granter" {
		t.Fatalf("config/rbac/allowance_granter_role.yaml holds ClusterRole %q", role.Name)
	}
	return role
}
