package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/controller/policyreport"
)

// csiProxyDaemonSet is CSI Proxy as csi-driver-smb's chart deploys it when
// asked to: a HostProcess DaemonSet in kube-system running image.
func csiProxyDaemonSet(name, image string) *appsv1.DaemonSet {
	yes := true
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					HostNetwork:     true,
					SecurityContext: &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: &yes}},
					NodeSelector:    map[string]string{"kubernetes.io/os": "windows"},
					Containers:      []corev1.Container{{Name: "csi-proxy", Image: image}},
				},
			},
		},
	}
}

const oldCSIProxy = `container "csi-proxy" runs CSI Proxy v1.1.2 (image "ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2"), a version that passes request strings to PowerShell unescaped, ` +
	`so that any caller of its pipes runs commands as the node's administrator (CVE-2023-3893); upgrade it to v1.1.3 or later`

// TestVulnerableCSIProxyIsReported: a CSI Proxy before v1.1.3 that already
// runs is reported by the background audit as a warn result of its own,
// rule vulnerable-csi-proxy, and a fixed one is not.
func TestVulnerableCSIProxyIsReported(t *testing.T) {
	var old client.Object
	e := startReports(t, time.Hour, true, func(c client.Client) {
		old = csiProxyDaemonSet("csi-proxy-old", "ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2")
		mustCreate(t, c, old, csiProxyDaemonSet("csi-proxy-fixed", "ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.3"))
	}, func(*app.Options) {})
	got := pollReports(t, e.c, "the audit of kube-system", func(m map[string][]storedReport) bool {
		return onlyReport(m, "kube-system") != nil
	})
	r := onlyReport(got, "kube-system")
	if r.Summary != (policyreport.Summary{Warn: 1}) || len(r.Results) != 1 {
		t.Fatalf("summary %+v with %d results, want one warn:%s", r.Summary, len(r.Results), describeReports(got))
	}
	res := r.Results[0]
	if res.Source != "pipeguard" || res.Policy != "pipeguard-default" || res.Rule != "vulnerable-csi-proxy" || res.Result != "warn" || res.Severity != "high" || res.Message != oldCSIProxy {
		t.Errorf("result %+v\nwant source pipeguard, policy pipeguard-default, rule vulnerable-csi-proxy, result warn, severity high, message %q", res, oldCSIProxy)
	}
	wantRef := policyreport.ObjectReference{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: "kube-system", Name: "csi-proxy-old", UID: old.GetUID()}
	if len(res.Resources) != 1 || res.Resources[0] != wantRef {
		t.Errorf("resources %+v, want [%+v]", res.Resources, wantRef)
	}
	if !equalMaps(res.Properties, map[string]string{"action": "warn", "container": "csi-proxy"}) {
		t.Errorf("properties %v, want the action and the container", res.Properties)
	}
}

// TestVulnerableCSIProxyAtAdmission: a default install does not send a
// HostProcess object that mounts nothing to the webhook at all, so an
// outage of pipeguard cannot stop it and the audit is what reports it;
// where a policy withholds HostProcess, such objects are reviewed and a
// vulnerable CSI Proxy is admitted with the warning.
func TestVulnerableCSIProxyAtAdmission(t *testing.T) {
	c := startClusterWith(t, func(o *app.Options) { o.WebhookConfigName = "pipeguard" })
	ctx := context.Background()
	c.mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-nodes"}})
	ds := func(name, image string) *appsv1.DaemonSet {
		d := csiProxyDaemonSet(name, image)
		d.Namespace = "csi-nodes"
		return d
	}
	if err := c.client.Create(ctx, ds("csi-proxy-new", "mcr.microsoft.com/oss/kubernetes-csi/csi-proxy:v1.0.2")); err != nil {
		t.Fatalf("a CSI Proxy DaemonSet was refused: %v", err)
	}
	if got := c.warnings.take(); len(got) != 0 {
		t.Errorf("default install: warnings %q, want none from a webhook that is not asked", got)
	}

	c.mustCreate(t, &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "node-agents"}, Spec: v1alpha1.PipeAccessPolicySpec{
		Pipes: []string{"csi-proxy-*"}, EnforcementAction: v1alpha1.Deny,
		Allow: v1alpha1.Allowances{HostProcess: kptr.To(false), Namespaces: []string{"csi-nodes"}},
	}})
	// The leader routes HostProcess objects to the webhook once the
	// policy is in force; until then they are admitted unreviewed.
	var got []string
	n := 0
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n++
		if err := c.client.Create(ctx, ds(fmt.Sprintf("csi-proxy-%d", n), "mcr.microsoft.com/oss/kubernetes-csi/csi-proxy:v1.0.2")); err != nil {
			return false, err
		}
		got = c.warnings.take()
		return len(got) > 0, nil
	})
	if err != nil {
		t.Fatalf("no warning ever came: %v", err)
	}
	const want = `[vulnerable-csi-proxy] container "csi-proxy" runs CSI Proxy v1.0.2 (image "mcr.microsoft.com/oss/kubernetes-csi/csi-proxy:v1.0.2"), a version that passes request strings to PowerShell unescaped, ` +
		`so that any caller of its pipes runs commands as the node's administrator (CVE-2023-3893); upgrade it to v1.1.3 or later`
	if len(got) != 1 || got[0] != want {
		t.Errorf("warnings %q, want the CVE's alone (csi-nodes is allowed)", got)
	}
	if err := c.client.Create(ctx, ds("csi-proxy-fixed", "mcr.microsoft.com/oss/kubernetes-csi/csi-proxy:v1.1.3")); err != nil {
		t.Fatal(err)
	}
	if got := c.warnings.take(); len(got) != 0 {
		t.Errorf("a fixed CSI Proxy got warnings %q", got)
	}
	err = c.client.Create(ctx, func() *appsv1.DaemonSet {
		d := ds("csi-proxy-elsewhere", "csi-proxy:v1.1.2")
		d.Namespace = "default"
		return d
	}())
	if err == nil || !strings.Contains(err.Error(), "[hostprocess-pipe-access]") {
		t.Errorf("a HostProcess DaemonSet outside the allowed namespace: %v, want the hostprocess-pipe-access denial", err)
	}
	if got := c.warnings.take(); !slices.ContainsFunc(got, func(w string) bool { return strings.HasPrefix(w, "[vulnerable-csi-proxy]") }) {
		t.Errorf("the denied CSI Proxy got warnings %q, want the CVE's too", got)
	}
}
