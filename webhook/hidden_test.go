package webhook_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/invisible"
	"github.com/pipeguard/pipeguard/internal/testing/invisibletest"
)

// TestHiddenCharactersAreEscapedInResponses: a pod whose pipe path holds a
// hidden character is denied with a message, and warned by an admin rule
// that quotes the path, in which U+FFFD stands where the character was.
func TestHiddenCharactersAreEscapedInResponses(t *testing.T) {
	quoting := v1alpha1.PipeAccessPolicy{}
	quoting.Name = "quoting"
	quoting.Spec = v1alpha1.PipeAccessPolicySpec{Pipes: []string{"vendor-*"}, EnforcementAction: v1alpha1.Warn,
		Rego: []v1alpha1.RegoModule{{Name: "quoting.rego", Source: `package pipeguard.admission.quoting

violation contains {"rule": "quote-path", "msg": sprintf("mount of %s", [m.rawPath])} if {
	some m in input.mounts
}
`}}}
	h := newHandler(t, quoting)
	for _, c := range invisibletest.Samples() {
		t.Run(c.Name, func(t *testing.T) {
			resp := h.Handle(context.Background(), podRequest(t, pod(fmt.Sprintf(`\\.\pipe\csi%cproxy-disk-v1`, c.Rune))))
			check(t, resp, denied(`[ambiguous-pipe-path] container "app" mounts \\.\pipe\csi`+"\uFFFD"+`proxy-disk-v1 through volume "pipe"`))
			texts := append([]string{resp.Result.Message}, resp.Warnings...)
			if len(resp.Warnings) != 1 || resp.Warnings[0] != `[quote-path] mount of \\.\pipe\csi`+"\uFFFD"+`proxy-disk-v1` {
				t.Errorf("warnings %q, want the admin rule's with U+FFFD for %s", resp.Warnings, c.Name)
			}
			for _, s := range texts {
				if strings.ContainsFunc(s, func(r rune) bool {
					return r == c.Rune || invisible.Hidden(r) && r != invisible.Replacement && r != '\n'
				}) {
					t.Errorf("response text %q holds a hidden character raw", s)
				}
			}
		})
	}
}
