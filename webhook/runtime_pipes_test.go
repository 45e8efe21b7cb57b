package webhook_test

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// runtimeSample is the shipped sample that protects the container
// runtime's pipes.
func runtimeSample(t *testing.T) v1alpha1.PipeAccessPolicy {
	t.Helper()
	data, err := os.ReadFile("../config/samples/container-runtime-pipes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p v1alpha1.PipeAccessPolicy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestContainerRuntimePipes: under the shipped sample, a plain container
// that mounts docker_engine or containerd's pipes, in any spelling, is
// warned about, and denied once the sample is switched to deny, while
// HostProcess containers and labelled namespaces keep their access, other
// pipes are not touched and CSI Proxy's stay with the built-in default.
func TestContainerRuntimePipes(t *testing.T) {
	sample := runtimeSample(t)
	if sample.Spec.EnforcementAction != v1alpha1.Warn {
		t.Fatalf("the sample ships in %q mode; it must start in warn", sample.Spec.EnforcementAction)
	}
	deny := sample
	deny.Spec.EnforcementAction = v1alpha1.Deny
	namespaces := webhook.StaticNamespaces{"team-a": {}, "monitoring": {"pipeguard.io/allow-container-runtime": "true"}}
	handler := func(p v1alpha1.PipeAccessPolicy) *webhook.Handler {
		e, err := policy.NewEngine(context.Background(), policy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{p}); err != nil {
			t.Fatal(err)
		}
		return webhook.NewHandler(webhook.Options{Engine: e, Namespaces: namespaces})
	}
	warn, strict := handler(sample), handler(deny)
	hostProcess := func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(true)}}
	}
	for _, path := range []string{
		`\\.\pipe\docker_engine`, `//./pipe/DOCKER_ENGINE`, `\\?\pipe\docker_engine`, `\\.\pipe\docker_engine_windows`,
		`\\.\pipe\containerd-containerd`, `\\.\PIPE\Containerd-Containerd`, `\\.\pipe\containerd-debug`,
	} {
		t.Run(path, func(t *testing.T) {
			ctx := context.Background()
			resp := warn.Handle(ctx, podRequest(t, pod(path)))
			check(t, resp, allowed)
			if len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], `[protected-pipe-mount] container "app" mounts \\.\pipe\`) ||
				!strings.HasSuffix(resp.Warnings[0], ` is not allowed; to allow it, label the namespace pipeguard.io/allow-container-runtime=true, or run the container as HostProcess`) {
				t.Errorf("warn mode: warnings %q, want one naming the pipe and the sample's label", resp.Warnings)
			}
			check(t, strict.Handle(ctx, podRequest(t, pod(path))), denied(`[protected-pipe-mount] container "app" mounts \\.\pipe\`))
			check(t, strict.Handle(ctx, podRequest(t, pod(path, hostProcess))), allowed)
			check(t, strict.Handle(ctx, podRequest(t, pod(path, inNamespace("monitoring")))), allowed)
		})
	}
	for path, w := range map[string]want{
		`\\.\pipe\some_agent`: allowed,
		`\\.\pipe\dockerd`:    allowed,
		// CSI Proxy's pipes stay with the built-in default.
		`\\.\pipe\csi-proxy-disk-v1`: denied(`to allow it, label the namespace pipeguard.io/allow-csi-proxy=true`),
	} {
		check(t, strict.Handle(context.Background(), podRequest(t, pod(path))), w)
	}
	const want = `[protected-pipe-mount] container "app" mounts \\.\pipe\docker_engine through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-container-runtime=true, or run the container as HostProcess`
	resp := strict.Handle(context.Background(), podRequest(t, pod(`\\.\pipe\docker_engine`)))
	if resp.Result == nil || resp.Result.Message != want {
		t.Errorf("denial:\n got %+v\nwant %q", resp.Result, want)
	}
}
