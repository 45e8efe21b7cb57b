package policy

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// TestInputValueMatchesJSON: the hand-built rego input must be exactly what
// the documented JSON form of Input converts to, so the schema in
// docs/writing-policies.md and the json tags stay the truth.
func TestInputValueMatchesJSON(t *testing.T) {
	in := &Input{
		Version: InputVersion,
		Request: Request{UID: "u", Operation: "UPDATE", Kind: "Pod", Group: "", Version: "v1", Resource: "pods",
			SubResource: "ephemeralcontainers", Namespace: "ns", Name: "p", Username: "alice", Groups: []string{"a", "b"}, DryRun: true},
		Namespace: &Namespace{Name: "ns", Labels: map[string]string{"b": "2", "a": "1"}},
		Object:    Object{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p"},
		Pod:       &Pod{ServiceAccountName: "sa", HostProcess: true},
		Mounts: []Mount{{Container: "c", ContainerKind: KindEphemeralContainer, Volume: "v", VolumeSource: "hostPath",
			RawPath: `//./pipe/x`, Path: `\\.\pipe\x`, PathClass: "pipe", Pipe: "x", AmbiguousReason: "r", ReadOnly: true, Privileged: true, HostProcess: true,
			ProtectedBy: []string{"p", "q"}}},
	}
	facts := PolicyFacts{Name: "p", Pipes: []string{"csi-proxy-*"}, EnforcementAction: "warn", NamespaceMatch: true,
		Allow: AllowFacts{Privileged: true, Namespaces: []string{"n"}, ServiceAccounts: []string{"s"},
			NamespaceSelector: &SelectorFacts{MatchLabels: map[string]string{"k": "v"},
				MatchExpressions: []SelectorRequirement{{Key: "k", Operator: "In", Values: []string{"v"}}}}}}
	withPolicies := *in
	withPolicies.Policies = []PolicyFacts{facts}
	want, err := ast.InterfaceToValue(&withPolicies)
	if err != nil {
		t.Fatal(err)
	}
	got := in.value([]*ast.Term{facts.term()}, nil)
	if ast.Compare(got, want) != 0 {
		t.Fatalf("hand-built input differs from its JSON form:\n got %v\nwant %v", got, want)
	}

	// Nil pointers are null, as in JSON; lists are always arrays.
	bare := &Input{Version: InputVersion, Request: Request{Groups: []string{}}, Mounts: []Mount{}, Policies: []PolicyFacts{}}
	want, _ = ast.InterfaceToValue(bare)
	if got := bare.value(nil, nil); ast.Compare(got, want) != 0 {
		t.Fatalf("bare input differs:\n got %v\nwant %v", got, want)
	}
}
