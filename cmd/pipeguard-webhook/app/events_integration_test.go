package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/controller/limits"
	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
)

// eventNote waits for the Events with reason about the object named name
// in namespace ns, and returns their message as kubectl describe shows
// it. The policy controller may record the same Event more than once
// (each compile of the set writes the policy's status anew); every one
// must say the same.
func eventNote(t *testing.T, c client.Client, ns, name, reason string) string {
	t.Helper()
	var found []corev1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var list corev1.EventList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": name, "reason": reason}); err != nil {
			return false, err
		}
		found = list.Items
		return len(found) > 0, nil
	})
	if err != nil {
		t.Fatalf("no %s Event about %s/%s: %v", reason, ns, name, err)
	}
	for _, e := range found[1:] {
		if e.Message != found[0].Message {
			t.Errorf("%s Events about %s/%s say different things:\n%s\n%s", reason, ns, name, found[0].Message, e.Message)
		}
	}
	return found[0].Message
}

// TestViolationEventOfManyMounts: a pod with 150 pipe mounts, created
// before pipeguard and its built-in default policy are in force, gets its
// Warning Event like a pod with one mount does. Its note names the
// violations that fit in what the API server takes and counts the rest.
// (No PipeAccessPolicy: one that came into force after the first pass
// would change the messages, which rightly records a second Event.)
func TestViolationEventOfManyMounts(t *testing.T) {
	c, _ := startAudited(t, time.Hour, func(c client.Client) {
		mustCreate(t, c,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			samplepods.ManyPipeMounts("many", "team-a", 150),
			samplepods.ManyPipeMounts("one", "team-a", 1),
		)
	})
	const why = `, but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`

	many := eventNote(t, c, "team-a", "many", controller.ReasonAuditViolation)
	want := `Pod many: admission would reject this object: [protected-pipe-mount] container "driver" mounts ` + samplepods.ThroughVolumes(12) + why +
		`; … and 138 more violations (see PolicyReport or Report pipeguard, or run pipeguard policy eval --cluster)`
	if many != want {
		t.Errorf("the Event of the pod with 150 mounts says\n%s\nwant\n%s", many, want)
	}
	if len(many) > limits.EventNote {
		t.Errorf("a note of %d bytes; the API server takes %d", len(many), limits.EventNote)
	}
	if !strings.HasSuffix(many, "; … and 138 more violations (see PolicyReport or Report pipeguard, or run pipeguard policy eval --cluster)") {
		t.Errorf("the note does not end with the count of the 138 violations it leaves out: %q", many)
	}

	one := eventNote(t, c, "team-a", "one", controller.ReasonAuditViolation)
	if want := `Pod one: admission would reject this object: [protected-pipe-mount] container "driver" mounts ` + samplepods.ThroughVolumes(1) + why; one != want {
		t.Errorf("the Event of the pod with one mount says\n%s\nwant\n%s", one, want)
	}
}

// TestCompileFailureEventOfManyErrors: a policy whose rego has more
// compile errors than an Event holds still gets its Warning Event, with
// the errors that fit, a count of the others and what is in force; its
// Ready condition keeps every error.
func TestCompileFailureEventOfManyErrors(t *testing.T) {
	var rego strings.Builder
	rego.WriteString("package pipeguard.admission.smb\n\n")
	for i := range 30 {
		fmt.Fprintf(&rego, "violation contains msg if {\n\tmsg := undefined_function_with_a_rather_long_name_%02d(input.request)\n}\n", i)
	}
	c, _ := startAudited(t, time.Hour, func(c client.Client) {
		mustCreate(t, c, &v1alpha1.PipeAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "smb"},
			Spec: v1alpha1.PipeAccessPolicySpec{
				Pipes: []string{"csi-proxy-smb-*"},
				Rego:  []v1alpha1.RegoModule{{Name: "rules.rego", Source: rego.String()}},
			},
		})
	})
	lines := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "\nsmb/rules.rego:%d: rego_type_error: undefined function undefined_function_with_a_rather_long_name_%02d", 4+3*i, i)
		}
		return b.String()
	}
	const head = "the latest spec (generation 1) is not in force: bundle activation failed: 11 errors occurred:"
	const inForce = "; no version of this policy is in force; fix the error to enforce it"

	// Events about cluster-scoped objects live in the default namespace.
	note := eventNote(t, c, "default", "smb", controller.ReasonInvalid)
	want := head + lines(7) + "\n… and 4 more errors (see the Ready condition of this PipeAccessPolicy)" + inForce
	if note != want {
		t.Errorf("the Event says\n%s\nwant\n%s", note, want)
	}
	if len(note) > limits.EventNote {
		t.Errorf("a note of %d bytes; the API server takes %d", len(note), limits.EventNote)
	}

	var p v1alpha1.PipeAccessPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Name: "smb"}, &p); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(p.Status.Conditions, controller.ConditionReady)
	if want := head + lines(10) + "\nrego_compile_error: error limit reached" + inForce; ready == nil || ready.Message != want {
		t.Errorf("Ready condition %+v\nwant the message\n%s", ready, want)
	}
}
