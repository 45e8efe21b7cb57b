package webhook_test

import (
	"context"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/webhook"
)

// Allowances are judged by what Windows does: the kubelet ignores
// securityContext.privileged, and a HostProcess container reaches every host
// pipe by its path without any mount.

func privileged(p *corev1.Pod) {
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{Privileged: boolPtr(true)}
	}
}

// TestPrivilegedIsNoAllowance: under the built-in default, the flag Windows
// ignores opens nothing, on any kind of container, and the message says so.
func TestPrivilegedIsNoAllowance(t *testing.T) {
	h := newHandler(t)
	const told = `but it is not HostProcess (securityContext.privileged has no effect on Windows) and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`
	cases := map[string]*corev1.Pod{
		"container": pod(diskPipe, privileged),
		"init container": pod(diskPipe, func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", VolumeMounts: p.Spec.Containers[0].VolumeMounts,
				SecurityContext: &corev1.SecurityContext{Privileged: boolPtr(true)}}}
			p.Spec.Containers[0].VolumeMounts = nil
		}),
		"ephemeral container (kubectl debug --profile=sysadmin)": pod(diskPipe, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debugger", VolumeMounts: p.Spec.Containers[0].VolumeMounts,
				SecurityContext: &corev1.SecurityContext{Privileged: boolPtr(true)}}}}
			p.Spec.Containers[0].VolumeMounts = nil
		}),
		"pod that declares Linux": pod(diskPipe, privileged, func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
		}),
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, h.Handle(context.Background(), podRequest(t, p)), denied(told))
		})
	}
	t.Run("an admin's opt-in is honoured", func(t *testing.T) {
		opt := pap("opt-in", func(s *v1alpha1.PipeAccessPolicySpec) { s.Allow.Privileged = boolPtr(true) })
		check(t, newHandler(t, opt).Handle(context.Background(), podRequest(t, pod(diskPipe, privileged))), allowed)
	})
}

// pap returns a PipeAccessPolicy for every CSI Proxy pipe with the API
// server's defaults, changed by mutate.
func pap(name string, mutate func(*v1alpha1.PipeAccessPolicySpec)) v1alpha1.PipeAccessPolicy {
	p := v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}, Spec: v1alpha1.PipeAccessPolicySpec{
		Pipes:             []string{"csi-proxy-*"},
		Allow:             v1alpha1.Allowances{Privileged: boolPtr(false), HostProcess: boolPtr(true)},
		EnforcementAction: v1alpha1.Deny,
	}}
	mutate(&p.Spec)
	return p
}

func hostProcessPod(p *corev1.Pod) {
	p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(true)}}
}

// noPipe makes a pod mount nothing that could name a pipe.
func noPipe(p *corev1.Pod) {
	p.Spec.Volumes = nil
	p.Spec.Containers[0].VolumeMounts = nil
}

// TestHostProcessReachesEveryPipe: where a policy withholds the HostProcess
// allowance, a HostProcess container is decided as reaching its pipes,
// mounted or not, at pod or container level, in every container kind; the
// namespaces the policy allows keep it, and without such a policy nothing
// changes.
func TestHostProcessReachesEveryPipe(t *testing.T) {
	smb := pap("smb", func(s *v1alpha1.PipeAccessPolicySpec) {
		s.Pipes = []string{"csi-proxy-smb-*", "csi-proxy-filesystem-*"}
		s.Allow.HostProcess = boolPtr(false)
		s.Allow.Namespaces = []string{"csi"}
	})
	strict := newHandler(t, smb)
	const refused = `[hostprocess-pipe-access] container "app" is a HostProcess container, which reaches every host pipe by its path without any mount, but PipeAccessPolicy "smb" withholds the HostProcess allowance and namespace "team-a" is not allowed; to allow it, add "team-a" to spec.allow.namespaces of PipeAccessPolicy "smb", or set spec.allow.hostProcess: true in PipeAccessPolicy "smb"`
	cases := map[string]struct {
		pod  *corev1.Pod
		want want
	}{
		"pod level, no mount": {pod(diskPipe, noPipe, hostProcessPod), denied(refused)},
		"container level, no mount": {pod(diskPipe, noPipe, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(true)}}
		}), denied(refused)},
		"with an ordinary host path": {pod(`C:\var\log`, hostProcessPod), denied(refused)},
		"init container": {pod(diskPipe, noPipe, func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "setup", SecurityContext: &corev1.SecurityContext{
				WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(true)}}}}
		}), denied(`[hostprocess-pipe-access] container "setup" (initContainer) is a HostProcess container`)},
		"ephemeral container": {pod(diskPipe, noPipe, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debugger", SecurityContext: &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(true)}}}}}
		}), denied(`[hostprocess-pipe-access] container "debugger" (ephemeralContainer) is a HostProcess container`)},
		"in a namespace the policy allows": {pod(diskPipe, noPipe, hostProcessPod, inNamespace("csi")), allowed},
		"not HostProcess":                  {pod(diskPipe, noPipe), allowed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, strict.Handle(context.Background(), podRequest(t, tc.pod)), tc.want)
		})
	}
	t.Run("a DaemonSet", func(t *testing.T) {
		p := pod(diskPipe, noPipe, hostProcessPod)
		ds := map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"name": "node", "namespace": "team-a"},
			"spec": map[string]any{"template": map[string]any{"spec": p.Spec}}}
		check(t, strict.Handle(context.Background(), request(t, admissionv1.Create, metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, "team-a", "node", ds)), denied(refused))
	})
	t.Run("no policy withholds the allowance", func(t *testing.T) {
		check(t, newHandler(t).Handle(context.Background(), podRequest(t, pod(diskPipe, noPipe, hostProcessPod))), allowed)
	})
}

// TestAmbiguousSpellingsNeedEveryAllowance: a namespace allowed for other
// pipes only (the container runtime's, or the SMB pipes) is not allowed an
// ambiguous spelling of the disk pipe, which the default still protects.
func TestAmbiguousSpellingsNeedEveryAllowance(t *testing.T) {
	runtimeOnly := pap("runtime", func(s *v1alpha1.PipeAccessPolicySpec) {
		s.Pipes = []string{"docker_engine*", "containerd-*"}
		s.Allow.Namespaces = []string{"team-a"}
	})
	smbOnly := pap("smb", func(s *v1alpha1.PipeAccessPolicySpec) {
		s.Pipes = []string{"csi-proxy-smb-*"}
		s.Allow.Namespaces = []string{"team-a"}
	})
	for _, policies := range [][]v1alpha1.PipeAccessPolicy{{runtimeOnly}, {smbOnly}} {
		h := newHandler(t, policies...)
		for _, path := range []string{
			`\\.\pipe\\\csi-proxy-disk-v1`, `\\.\pipe\`, `\\.\pipe`, `\\localhost\IPC$`, `\\LOCALHOST\IPC$`,
			`\Device\NamedPipe\`, `\\.\GLOBALROOT\Device\NamedPipe`, `/Device/Mup/localhost`, `\\.\pipe\..\pipe\csi-proxy-disk-v1`,
		} {
			t.Run(policies[0].Name+" "+path, func(t *testing.T) {
				check(t, h.Handle(context.Background(), podRequest(t, pod(path))), denied(`container "app" mounts`))
			})
		}
	}
}

// TestHostProcessContainersAreBounded: each HostProcess container is a
// fact of its own, so an object with more than MaxHostProcessContainers
// is denied before any rule runs; one at the bound is decided.
func TestHostProcessContainersAreBounded(t *testing.T) {
	h := newHandler(t)
	many := func(n int) *corev1.Pod {
		return pod(diskPipe, noPipe, hostProcessPod, func(p *corev1.Pod) {
			p.Spec.Containers = make([]corev1.Container, n)
			for i := range p.Spec.Containers {
				p.Spec.Containers[i] = corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "c"}
			}
		})
	}
	check(t, h.Handle(context.Background(), podRequest(t, many(webhook.MaxHostProcessContainers))), allowed)
	check(t, h.Handle(context.Background(), podRequest(t, many(webhook.MaxHostProcessContainers+1))),
		denied(fmt.Sprintf(`[too-many-host-paths] Pod "web" has %d HostProcess containers, more than the %d pipeguard reviews`,
			webhook.MaxHostProcessContainers+1, webhook.MaxHostProcessContainers)))
}
