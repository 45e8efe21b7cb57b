package app_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// shippedWebhookRole reads the ClusterRole config/rbac ships for
// pipeguard-webhook, so that the test grants exactly that.
func shippedWebhookRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	const file = "../../../config/rbac/role.yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		role := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal([]byte(doc), role); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if role.Kind == "ClusterRole" && role.Name == "pipeguard-webhook" {
			return role
		}
	}
	t.Fatalf("%s holds no ClusterRole pipeguard-webhook", file)
	return nil
}

// readyMessage waits until the Ready condition of the policy's current
// generation is True with a message that starts with want, and returns it.
func readyMessage(t *testing.T, c client.Client, name, want string) string {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p := &v1alpha1.PipeAccessPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(p.Status.Conditions, controller.ConditionReady)
		if cond == nil || cond.ObservedGeneration != p.Generation || cond.Status != metav1.ConditionTrue {
			return false, nil
		}
		last = cond.Message
		return strings.HasPrefix(last, want), nil
	})
	if err != nil {
		t.Fatalf("PipeAccessPolicy %s: Ready message\n%s\nwant it to start with\n%s", name, last, want)
	}
	return last
}

// TestAllowanceWarnings: as the ServiceAccount config/default runs it as,
// with the ClusterRole of config/rbac, pipeguard-webhook warns in a
// policy's Ready message that allow.serviceAccounts narrows which pods get
// the allowance and not who, that a named namespace does not exist (until
// it is created, and again once it is deleted), and that a named
// ServiceAccount does not exist in a named namespace (until it is
// created, which nothing watched announces: the next recheck finds it).
func TestAllowanceWarnings(t *testing.T) {
	const (
		inForce   = "generation 1 of this policy is in force"
		nsLater   = `warning: spec.allow.namespaces names namespace "csi-later", which does not exist: whoever creates namespace "csi-later" first gets this allowance; create it now, or remove it from spec.allow.namespaces; `
		caveat    = `warning: spec.allow.serviceAccounts narrows which pods of an allowed namespace get this allowance, not who gets it: anyone who may create pods in such a namespace may run them as any of its ServiceAccounts, and a workload there may name one that does not exist yet; `
		smbAbsent = `warning: ServiceAccount "absent" does not exist in namespace "csi-smb": a workload there may name it now, and its pods get this allowance once anyone who may create ServiceAccounts there creates it; create it now, or remove it from spec.allow.serviceAccounts; `
		laterBoth = `warning: ServiceAccounts "absent" and "present" do not exist in namespace "csi-later": a workload there may name them now, and its pods get this allowance once anyone who may create ServiceAccounts there creates them; create them now, or remove them from spec.allow.serviceAccounts; `
	)
	env, _, _ := startWebhookOn(t, testenv.Options{Scheme: scheme(t), CRDDirectoryPaths: []string{"../../../config/crd/bases"}}, 2*time.Second, testr.New(t), func(admin client.Client) {
		role := shippedWebhookRole(t)
		mustCreate(t, admin, role, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pipeguard-webhook"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "pipeguard-webhook", Namespace: "pipeguard-system"}}})
		mustCreate(t, admin,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-smb"}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "present", Namespace: "csi-smb"}},
			&v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "smb"}, Spec: v1alpha1.PipeAccessPolicySpec{
				Pipes: []string{"csi-proxy-smb-*"},
				Allow: v1alpha1.Allowances{Namespaces: []string{"csi-smb", "csi-later"}, ServiceAccounts: []string{"present", "absent"}}}},
			&v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "by-name"}, Spec: v1alpha1.PipeAccessPolicySpec{
				Pipes: []string{"csi-proxy-disk-*"}, Allow: v1alpha1.Allowances{Namespaces: []string{"csi-smb", "csi-later"}}}},
		)
	}, func(o *app.Options) {
		sa := rest.CopyConfig(o.Config)
		sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:pipeguard-system:pipeguard-webhook"}
		o.Config = sa
	})
	c := env.Client

	readyMessage(t, c, "smb", nsLater+caveat+smbAbsent+inForce)
	readyMessage(t, c, "by-name", nsLater+inForce)

	// The namespace appears: its warning goes, and its ServiceAccounts are
	// looked up too.
	mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-later"}})
	readyMessage(t, c, "by-name", inForce)
	readyMessage(t, c, "smb", caveat+laterBoth+smbAbsent+inForce)

	// A ServiceAccount appears: the next recheck sees it.
	mustCreate(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "absent", Namespace: "csi-smb"}})
	readyMessage(t, c, "smb", caveat+laterBoth+inForce)

	// The namespace goes (no namespace controller runs here: finalize it
	// by hand): the warning comes back.
	ctx := context.Background()
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-later"}}); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "csi-later", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = nil
	if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	readyMessage(t, c, "by-name", nsLater+inForce)
	readyMessage(t, c, "smb", nsLater+caveat+inForce)
}
