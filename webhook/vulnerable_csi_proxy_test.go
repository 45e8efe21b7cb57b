package webhook_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// csiProxyPod is CSI Proxy as csi-driver-smb's chart deploys it: a
// HostProcess container, mounting nothing, running image.
func csiProxyPod(image string) *corev1.Pod {
	return pod(diskPipe, noPipe, hostProcessPod, inNamespace("kube-system"), func(p *corev1.Pod) {
		p.Name = "csi-proxy-win-x7f2k"
		p.Spec.Containers[0].Name = "csi-proxy"
		p.Spec.Containers[0].Image = image
	})
}

const vulnerableWarning = `[vulnerable-csi-proxy] container "csi-proxy" runs CSI Proxy v1.1.2 (image "ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2"), ` +
	`a version that passes request strings to PowerShell unescaped, so that any caller of its pipes runs commands as the node's administrator (CVE-2023-3893); upgrade it to v1.1.3 or later`

// TestVulnerableCSIProxyIsWarned: a CSI Proxy older than v1.1.3 is admitted
// with a warning that names the CVE and the remedy, whether or not
// HostProcess is allowed, and whichever way it arrives: created, after a
// fixed version was decided (the decision cache keys on the image), or by an
// update that only changes the image (which swaps the code a HostProcess
// container runs on the host).
func TestVulnerableCSIProxyIsWarned(t *testing.T) {
	const old, fixed = "ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2", "ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.3"
	warnings := func(t *testing.T, resp admission.Response) []string {
		t.Helper()
		if !resp.Allowed {
			t.Fatalf("denied: %v", resp.Result)
		}
		return resp.Warnings
	}
	ctx := context.Background()
	e, err := policy.NewEngine(ctx, policy.Options{DecisionCacheSize: 64}) // as deployed
	if err != nil {
		t.Fatal(err)
	}
	h := webhook.NewHandler(webhook.Options{Engine: e, Namespaces: testNamespaces})
	if got := warnings(t, h.Handle(ctx, podRequest(t, csiProxyPod(fixed)))); len(got) != 0 {
		t.Errorf("CSI Proxy v1.1.3: warnings %q, want none", got)
	}
	if got := warnings(t, h.Handle(ctx, podRequest(t, csiProxyPod(old)))); !slices.Equal(got, []string{vulnerableWarning}) {
		t.Errorf("CSI Proxy v1.1.2 after v1.1.3 was decided:\n got %q\nwant %q", got, []string{vulnerableWarning})
	}

	t.Run("an update that only downgrades the image", func(t *testing.T) {
		req := podRequest(t, csiProxyPod(old))
		req.Operation = admissionv1.Update
		req.OldObject.Raw = mustJSON(t, csiProxyPod(fixed))
		if got := warnings(t, h.Handle(ctx, req)); !slices.Equal(got, []string{vulnerableWarning}) {
			t.Errorf("warnings %q, want the CVE's", got)
		}
		req.OldObject.Raw = mustJSON(t, csiProxyPod(old))
		if got := warnings(t, h.Handle(ctx, req)); len(got) != 0 {
			t.Errorf("an update that changes nothing: warnings %q, want none (the pod was judged when it was created)", got)
		}
	})

	t.Run("HostProcess withheld: denied, and warned too", func(t *testing.T) {
		strict := newHandler(t, pap("strict", func(s *v1alpha1.PipeAccessPolicySpec) { s.Allow.HostProcess = boolPtr(false) }))
		resp := strict.Handle(ctx, podRequest(t, csiProxyPod(old)))
		if resp.Allowed {
			t.Fatal("allowed a HostProcess container under a policy that withholds HostProcess")
		}
		if !slices.Contains(resp.Warnings, vulnerableWarning) {
			t.Errorf("warnings %q, want the CVE's beside the denial", resp.Warnings)
		}
	})

	t.Run("not HostProcess: the image is not judged", func(t *testing.T) {
		p := csiProxyPod(old)
		p.Spec.SecurityContext = nil
		if got := warnings(t, h.Handle(ctx, podRequest(t, p))); len(got) != 0 {
			t.Errorf("warnings %q, want none", got)
		}
	})

	t.Run("an init container and an ephemeral container", func(t *testing.T) {
		p := csiProxyPod(fixed)
		p.Spec.InitContainers = []corev1.Container{{Name: "old-proxy", Image: "csi-proxy:v1.0.0"}}
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug-proxy", Image: "csi-proxy:v2.0.0-alpha.0"}}}
		got := warnings(t, h.Handle(ctx, podRequest(t, p)))
		if len(got) != 2 {
			t.Fatalf("warnings %q, want one for each old CSI Proxy", got)
		}
		for i, c := range []string{`container "debug-proxy"`, `container "old-proxy"`} {
			if !strings.Contains(got[i], c) {
				t.Errorf("warning %d = %q, want it to name %s", i, got[i], c)
			}
		}
	})
}
