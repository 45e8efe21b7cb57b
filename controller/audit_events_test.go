package controller_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/controller/limits"
	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
	"github.com/pipeguard/pipeguard/policy"
)

// mountsPod is samplepods.ManyPipeMounts in team-a, with a UID.
func mountsPod(name string, n int) *corev1.Pod {
	p := samplepods.ManyPipeMounts(name, "team-a", n)
	p.UID = types.UID("uid-" + name)
	return p
}

// csiPolicy allows CSI Proxy's pipes in namespace csi-driver only.
func csiPolicy() v1alpha1.PipeAccessPolicy {
	return v1alpha1.PipeAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "csi"},
		Spec:       v1alpha1.PipeAccessPolicySpec{Pipes: []string{"csi-proxy-*"}, Allow: v1alpha1.Allowances{Namespaces: []string{"csi-driver"}}},
	}
}

// TestViolationEvents: a pod with many pipe mounts gets its Event, which
// names as many of its violations as an Event holds and counts the rest;
// a pod with one mount gets admission's message whole.
func TestViolationEvents(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, mountsPod("many", 150), mountsPod("one", 1),
	).Build()
	engine, err := policy.NewEngine(ctx, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Load(ctx, []v1alpha1.PipeAccessPolicy{csiPolicy()}); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(10)
	a, err := controller.NewAuditor(controller.AuditorOptions{Config: &rest.Config{}, Scheme: s, Client: c, Engine: engine, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RunOnce(ctx, c); err != nil {
		t.Fatal(err)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}

	const why = `, but it is not HostProcess and namespace "team-a" is not allowed; to allow it, add "team-a" to spec.allow.namespaces of PipeAccessPolicy "csi", or run the container as HostProcess`
	want := []string{
		`Warning PipeAccessViolation Pod many: admission would reject this object: [protected-pipe-mount] container "driver" mounts ` + samplepods.ThroughVolumes(11) + why +
			`; … and 139 more violations (see PolicyReport or Report pipeguard, or run pipeguard policy eval --cluster)`,
		`Warning PipeAccessViolation Pod one: admission would reject this object: [protected-pipe-mount] container "driver" mounts ` + samplepods.ThroughVolumes(1) + why,
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d:\n got %s\nwant %s", i, got[i], want[i])
		}
		if note := strings.TrimPrefix(got[i], "Warning PipeAccessViolation "); len(note) > limits.EventNote {
			t.Errorf("event %d: note of %d bytes, over the API server's %d", i, len(note), limits.EventNote)
		}
	}
	// Twelve targets and the count fill the note: a thirteenth would not fit.
	if n := len(strings.TrimPrefix(want[0], "Warning PipeAccessViolation ")); n+len(`, \\.\pipe\csi-proxy-disk-v1 through volume "pipe-012"`) <= limits.EventNote {
		t.Errorf("the note of %d bytes has room for another violation", n)
	}
}
