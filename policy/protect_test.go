package policy

import (
	"context"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	shipped "github.com/pipeguard/pipeguard/rego"
)

// TestProtectionMatchesRego: the protectedBy fact the engine computes is
// what the shipped rules compute from the policies' patterns with
// glob.match, for every pattern syntax and for tricky pipe names, with the
// built-in default in force beside the policies and without it.
func TestProtectionMatchesRego(t *testing.T) {
	patterns := map[string][]string{
		"a-default":  {"csi-proxy*"},
		"b-star":     {"csi-proxy-*-v1", "vendor-?-agent"},
		"c-class":    {"csi-proxy-[ds]isk-v1", "x[!a-c]z"},
		"d-alt":      {"{smb,iscsi}-*"},
		"e-dots":     {"a.*"},
		"f-exact":    {"csi-proxy-system-v1alpha1"},
		"g-anything": {"*"},
	}
	for name, builtin := range map[string]bool{"covering": false, "partial": true} {
		t.Run(name, func(t *testing.T) {
			var policies []v1alpha1.PipeAccessPolicy
			for name, pipes := range patterns {
				if builtin && (name == "a-default" || name == "g-anything") {
					continue
				}
				policies = append(policies, v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: v1alpha1.PipeAccessPolicySpec{Pipes: pipes}})
			}
			gen, err := Compile(context.Background(), policies, 1)
			if err != nil {
				t.Fatal(err)
			}
			if gen.Default.InForce != builtin {
				t.Fatalf("built-in default in force: %v, want %v", gen.Default.InForce, builtin)
			}
			protectionMatchesRego(t, gen)
		})
	}
}

func protectionMatchesRego(t *testing.T, gen *Generation) {
	opts := []func(*rego.Rego){
		rego.Query("x := data.pipeguard.admission.protecting(input.mount)"),
		rego.SetRegoVersion(ast.RegoV1),
	}
	for _, f := range shipped.Admission() {
		opts = append(opts, rego.Module(f.Name, f.Source))
	}
	pq, err := rego.New(opts...).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	policyTerms := make([]*ast.Term, len(gen.policies))
	for i, p := range gen.policies {
		policyTerms[i] = p.term(false)
	}
	pipes := []string{
		"csi-proxy-disk-v1", "csi-proxy-smb-v1", "csi-proxy-system-v1alpha1", "csi-proxy", "csi-proxy-",
		"csi-proxy-disk-v1beta1", "vendor-a-agent", "vendor-ab-agent", "xbz", "xdz", "smb-1", "iscsi-",
		"a.b", "a.b.c", "a", "", "csi-proxy-dısk-v1", "csi-proxy-disk-v1\x00", "*", "[", "{smb,iscsi}-x",
	}
	for _, class := range []string{"pipe", "ambiguous", "none"} {
		for _, pipe := range pipes {
			m := Mount{PathClass: class, Pipe: pipe}
			got, term := gen.protection.of(&m)
			mountTerm := ast.NewTerm(object(key.pathClass, ast.StringTerm(class), key.pipe, ast.StringTerm(pipe)))
			input := object(ast.StringTerm("mount"), mountTerm, key.policies, ast.ArrayTerm(policyTerms...))
			rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(input))
			if err != nil || len(rs) != 1 {
				t.Fatalf("%s %q: rego gave %v, %v", class, pipe, rs, err)
			}
			var want []string
			for _, n := range rs[0].Bindings["x"].([]any) {
				want = append(want, n.(string))
			}
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%s %q: engine says protected by %q, the rules' patterns by %q", class, pipe, got, want)
			}
			if ast.Compare(term.Value, stringsTerm(got).Value) != 0 {
				t.Errorf("%s %q: term %v differs from names %q", class, pipe, term, got)
			}
		}
	}
}

// The memo of pipe names stays bounded.
func TestProtectionMemoIsBounded(t *testing.T) {
	gen, err := Compile(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxProtectionMemo + 10 {
		gen.protection.of(&Mount{PathClass: "pipe", Pipe: "csi-proxy-" + string(rune('a'+i%26)) + string(rune(i))})
	}
	if n := len(gen.protection.byPipe); n > maxProtectionMemo {
		t.Errorf("memo holds %d pipe names, want at most %d", n, maxProtectionMemo)
	}
}
