package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	shipped "github.com/pipeguard/pipeguard/rego"
)

// TestDecisionKeyCoversWhatTheRulesRead keeps decisionKey and
// shippedValue in step with the shipped admission rules: every part of the
// input they read must be in the key, or two inputs that differ there would
// share a decision, and in the input of generations without admin rules.
func TestDecisionKeyCoversWhatTheRulesRead(t *testing.T) {
	// What decisionKey and shippedValue hold (policies are the
	// generation's own).
	inKey := []string{"mounts", "namespace.name", "pod.serviceAccountName", "pod.hostProcess", "policies"}
	var read []string
	for _, f := range shipped.Admission() {
		m, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		ast.WalkTerms(m, func(term *ast.Term) bool {
			switch v := term.Value.(type) {
			case ast.Ref:
				if v[0].Equal(ast.InputRootDocument) {
					read = append(read, inputPath(v[1:]))
					return true // the rest of the ref is not a bare use of input
				}
			case ast.Call:
				// object.get(input, ["a", "b"], default)
				if v[0].Value.Compare(ast.MustParseRef("object.get")) == 0 && v[1].Value.Compare(ast.InputRootRef) == 0 {
					if arr, ok := v[2].Value.(*ast.Array); ok {
						var path ast.Ref
						arr.Foreach(func(el *ast.Term) { path = append(path, el) })
						read = append(read, inputPath(path))
						return true
					}
				}
			case ast.Var:
				if term.Equal(ast.InputRootDocument) {
					read = append(read, "input")
				}
			}
			return false
		})
	}
	if len(read) == 0 {
		t.Fatal("found no use of input in the shipped rules")
	}
	for _, r := range read {
		covered := slices.ContainsFunc(inKey, func(k string) bool { return r == k || strings.HasPrefix(r, k+".") })
		if !covered {
			t.Errorf("the shipped rules read input.%s, which decisionKey does not hold; add it to the key", r)
		}
	}
}

// inputPath renders a path below input such as ["pod", "serviceAccountName"]
// as "pod.serviceAccountName", up to its first non-string element.
func inputPath(path ast.Ref) string {
	var parts []string
	for _, el := range path {
		s, ok := el.Value.(ast.String)
		if !ok {
			break
		}
		parts = append(parts, string(s))
	}
	if len(parts) == 0 {
		return "input"
	}
	return strings.Join(parts, ".")
}

// TestNamespaceNameOnlyInMessages keeps the placeholder sound: the shipped
// rules may read the namespace's name only in namespace_name, and may use
// namespace_name only as an argument of sprintf printed with %q, %s or %v,
// which print a DNS label as it is. Used anywhere else (compared, matched,
// or changed before printing), the name could change a decision or print
// in a form the renaming cannot find.
func TestNamespaceNameOnlyInMessages(t *testing.T) {
	nameRef := ast.MustParseRef("input.namespace.name")
	objectGet, sprintf := ast.MustParseRef("object.get"), ast.Ref{ast.VarTerm("sprintf")}
	isNameVar := func(term *ast.Term) bool {
		switch v := term.Value.(type) {
		case ast.Var:
			return v == "namespace_name"
		case ast.Ref:
			return len(v) == 1 && v[0].Equal(ast.VarTerm("namespace_name"))
		}
		return false
	}
	uses, printed := 0, 0
	for _, f := range shipped.Admission() {
		m, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		for _, rule := range m.Rules {
			head := rule.Head.Name.String()
			if len(rule.Head.Reference) > 0 {
				head = rule.Head.Reference.String()
			}
			for r := rule; r != nil; r = r.Else {
				var parts []any
				parts = append(parts, r.Body)
				if r.Head.Value != nil {
					parts = append(parts, r.Head.Value)
				}
				if r.Head.Key != nil {
					parts = append(parts, r.Head.Key)
				}
				for _, a := range r.Head.Args {
					parts = append(parts, a)
				}
				for _, part := range parts {
					ast.WalkTerms(part, func(term *ast.Term) bool {
						if ref, ok := term.Value.(ast.Ref); ok && ref.HasPrefix(nameRef) && head != "namespace_name" {
							t.Errorf("%s: rule %s reads input.namespace.name; read it only through namespace_name", term.Location, head)
						}
						if call, ok := term.Value.(ast.Call); ok && call[0].Value.Compare(objectGet) == 0 &&
							call[1].Value.Compare(ast.InputRootRef) == 0 && inputPath(refOf(call[2])) == "namespace.name" && head != "namespace_name" {
							t.Errorf("%s: rule %s reads input.namespace.name; read it only through namespace_name", term.Location, head)
						}
						if isNameVar(term) {
							uses++
						}
						if call, ok := term.Value.(ast.Call); ok && call[0].Value.Compare(sprintf) == 0 && len(call) == 3 {
							format, fok := call[1].Value.(ast.String)
							args, aok := call[2].Value.(*ast.Array)
							if !fok || !aok {
								return false
							}
							verbs := sprintfVerbs(string(format))
							for i := range args.Len() {
								if isNameVar(args.Elem(i)) && i < len(verbs) && strings.ContainsRune("qsv", verbs[i]) {
									printed++
								}
							}
						}
						return false
					})
				}
			}
		}
	}
	if uses == 0 {
		t.Fatal("found no use of namespace_name; if the rules no longer name the namespace, drop this test and the placeholder")
	}
	if uses != printed {
		t.Errorf("namespace_name is used %d times, only %d of them as a sprintf argument printed with %%q, %%s or %%v", uses, printed)
	}
}

// refOf turns an array term such as ["namespace", "name"] into a path.
func refOf(term *ast.Term) ast.Ref {
	arr, ok := term.Value.(*ast.Array)
	if !ok {
		return nil
	}
	var path ast.Ref
	arr.Foreach(func(el *ast.Term) { path = append(path, el) })
	return path
}

// sprintfVerbs lists the verb of each argument a format string consumes.
func sprintfVerbs(format string) []rune {
	var verbs []rune
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i < len(format) && format[i] != '%' {
			verbs = append(verbs, rune(format[i]))
		}
	}
	return verbs
}
