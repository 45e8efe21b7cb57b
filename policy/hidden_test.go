package policy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/invisible"
	"github.com/pipeguard/pipeguard/internal/testing/invisibletest"
	"github.com/pipeguard/pipeguard/pipepath"
	"github.com/pipeguard/pipeguard/policy"
)

// quotingRule is an admin rule whose message quotes each mount's path as
// written, and adds the hidden characters of its own.
const quotingRule = `package pipeguard.admission.quoting

violation contains {"rule": "quote-path", "msg": sprintf("mount %s%s", [m.rawPath, "` + `\u2028\u3164\u2800"])} if {
	some m in input.mounts
}
`

// hiddenMount is a mount of a path that holds r, with the facts the
// webhook derives from it.
func hiddenMount(r rune) policy.Mount {
	raw := fmt.Sprintf(`\\.\pipe\csi%cproxy-disk-v1`, r)
	res := pipepath.Classify(raw)
	return policy.Mount{
		Container: "driver", ContainerKind: policy.KindContainer, Volume: "pipe", VolumeSource: "hostPath",
		RawPath: raw, Path: res.Normalized, PathClass: string(res.Class), Pipe: res.Pipe, AmbiguousReason: res.Reason,
	}
}

// TestViolationsAreEscaped: whatever hidden character a path holds, the
// messages and every other field of the violations, the shipped rules' and
// an admin rule's that quotes the path, carry U+FFFD in its place.
func TestViolationsAreEscaped(t *testing.T) {
	e := newEngine(t)
	quoting := pap("quoting", func(s *v1alpha1.PipeAccessPolicySpec) {
		s.EnforcementAction = v1alpha1.Warn
		s.Rego = []v1alpha1.RegoModule{{Name: "quoting.rego", Source: quotingRule}}
	})
	if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{quoting}); err != nil {
		t.Fatal(err)
	}
	for _, c := range invisibletest.Samples() {
		t.Run(c.Name, func(t *testing.T) {
			m := hiddenMount(c.Rune)
			if m.PathClass == string(pipepath.NotPipe) {
				t.Fatalf("%q is not protected", m.RawPath)
			}
			d, err := e.Evaluate(context.Background(), podInput("team-a", nil, m))
			if err != nil {
				t.Fatal(err)
			}
			all := append(append([]policy.Violation{}, d.Deny...), d.Warn...)
			var quoted *policy.Violation
			for i := range all {
				if all[i].Rule == "quote-path" {
					quoted = &all[i]
				}
			}
			if len(all) < 2 || quoted == nil {
				t.Fatalf("deny %v warn %v; want the shipped rule's violation and the admin rule's", d.Deny, d.Warn)
			}
			for _, v := range all {
				fields := []string{v.Rule, v.Message, v.Container, v.Volume, v.Path, v.Pipe, v.Subject, v.Target, v.Reason, v.Remedy}
				for _, f := range append(fields, v.Policies...) {
					if strings.ContainsFunc(f, func(r rune) bool { return invisible.Hidden(r) && r != invisible.Replacement }) {
						t.Errorf("violation %s holds a hidden character raw in %q", v.Rule, f)
					}
				}
			}
			for _, msg := range policy.Messages(all) {
				if !strings.Contains(msg, `\\.\pipe\csi`+"\uFFFD"+`proxy-disk-v1`) {
					t.Errorf("message %q does not show the path with U+FFFD in place of %s", msg, c.Name)
				}
			}
			if got, want := quoted.Message, `mount \\.\pipe\csi`+"\uFFFD"+"proxy-disk-v1\uFFFD\uFFFD\uFFFD"; got != want {
				t.Errorf("admin rule message %q, want %q", got, want)
			}
		})
	}
}
