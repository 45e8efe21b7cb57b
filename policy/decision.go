package policy

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/pipeguard/pipeguard/internal/invisible"
)

// Violation is one element of the deny, warn or dryrun set.
type Violation struct {
	Rule          string   `json:"rule"`
	Message       string   `json:"msg"`
	Action        Verdict  `json:"action"` // warn, dryrun or deny
	Container     string   `json:"container,omitempty"`
	ContainerKind string   `json:"containerKind,omitempty"`
	Volume        string   `json:"volume,omitempty"`
	Path          string   `json:"path,omitempty"`
	Pipe          string   `json:"pipe,omitempty"`
	Policies      []string `json:"policies,omitempty"`
	// Subject, Target, Reason and Remedy are the parts of a shipped
	// rule's message about one mount: "<subject> mounts <target>, but
	// <reason>; to allow it, <remedy>". Messages joins the violations of
	// one container that differ only in their target. Empty for messages
	// that have no such parts.
	Subject string `json:"subject,omitempty"`
	Target  string `json:"target,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Remedy  string `json:"remedy,omitempty"`
}

// String renders the violation as a user reads it: "[rule] message".
func (v Violation) String() string {
	return fmt.Sprintf("[%s] %s", v.Rule, v.Message)
}

// Decision is the outcome of one evaluation.
type Decision struct {
	// Generation is the policy generation that decided.
	Generation int64 `json:"generation"`
	// Evaluated is false when the input had no host path mount and rego was
	// not consulted.
	Evaluated bool `json:"evaluated"`
	// Cached is true when no rule was evaluated for this decision: it was
	// remembered from an earlier evaluation of the same facts by the same
	// generation, perhaps for another namespace whose name is then written
	// into the messages. A generation with admin-written rules evaluates
	// them on every review, so its decisions are never Cached.
	Cached bool        `json:"cached,omitempty"`
	Deny   []Violation `json:"deny,omitempty"`
	Warn   []Violation `json:"warn,omitempty"`
	DryRun []Violation `json:"dryrun,omitempty"`
}

// Verdict is what admission does with an object. It is the one spelling of
// a decision in pipeguard: the webhook's audit annotation, the background
// audit and `pipeguard policy eval` all carry a Verdict, and each boundary
// that shows one in other words (the CLI's upper-case text, a
// PolicyReport's result, a metric's labels) maps it in one place.
type Verdict string

// The verdicts, from least to most severe. A violation's Action is one of
// Warn, DryRun and Deny: the enforcement action of the policies it comes
// from.
const (
	// Allow admits the object; nothing was found.
	Allow Verdict = "allow"
	// DryRun admits the object and records what would have been denied.
	DryRun Verdict = "dryrun"
	// Warn admits the object with warnings.
	Warn Verdict = "warn"
	// Deny rejects the object.
	Deny Verdict = "deny"
	// Error is the verdict on an object that could not be decided (its
	// rules ran out of time or failed, AdminRuleError): admission rejects
	// it, failing closed, with an internal error rather than a denial.
	// Decision.Verdict never returns it; the background audit reports
	// it for an object whose evaluation failed.
	Error Verdict = "error"
)

// Verdict is what admission does on d: deny when anything is denied, else
// warn when anything warns, else dryrun when anything is recorded, else
// allow.
func (d *Decision) Verdict() Verdict {
	switch {
	case len(d.Deny) > 0:
		return Deny
	case len(d.Warn) > 0:
		return Warn
	case len(d.DryRun) > 0:
		return DryRun
	}
	return Allow
}

// Denied reports whether the request must be rejected.
func (d *Decision) Denied() bool { return len(d.Deny) > 0 }

// Messages renders violations as users read them, sorted so that responses
// are stable: one message per container and rule, naming every pipe the
// container mounts and the volume it comes through, then why that is not
// allowed and what would allow it, once. Violations whose reason or remedy
// differ, and those without message parts, get a message each.
func Messages(vs []Violation) []string {
	type group struct {
		first   Violation
		targets []string
		// seen holds the targets, so that a container with many mounts
		// costs linear time, not quadratic.
		seen map[string]struct{}
	}
	var groups []*group
	byKey := map[[5]string]*group{}
	var out []string
	for _, v := range vs {
		if v.Subject == "" || v.Target == "" {
			out = append(out, v.String())
			continue
		}
		k := [5]string{v.Rule, v.Subject, v.Reason, v.Remedy, string(v.Action)}
		g := byKey[k]
		if g == nil {
			g = &group{first: v, seen: map[string]struct{}{}}
			byKey[k] = g
			groups = append(groups, g)
		}
		if _, dup := g.seen[v.Target]; !dup {
			g.seen[v.Target] = struct{}{}
			g.targets = append(g.targets, v.Target)
		}
	}
	for _, g := range groups {
		if len(g.targets) == 1 {
			out = append(out, g.first.String())
			continue
		}
		sort.Strings(g.targets)
		out = append(out, fmt.Sprintf("[%s] %s mounts %s, but %s; to allow it, %s",
			g.first.Rule, g.first.Subject, joinList(g.targets), g.first.Reason, g.first.Remedy))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// joinList joins items as "a, b and c".
func joinList(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// with returns d with the violations of admin-written rules added to the
// set their action names, each once. d itself is left as it is, since the
// cache may share it.
func (d *Decision) with(admin []Violation) *Decision {
	out := *d
	out.Cached = false
	out.Evaluated = true
	// A set of what each set holds keeps this linear in the violations:
	// an admin rule may report one per mount.
	held := map[violationKey]struct{}{}
	for _, set := range [][]Violation{out.Deny, out.Warn, out.DryRun} {
		for _, v := range set {
			held[v.key()] = struct{}{}
		}
	}
	for _, v := range admin {
		dst := out.setOf(v.Action)
		if _, dup := held[v.key()]; !dup {
			held[v.key()] = struct{}{}
			*dst = append(slices.Clip(*dst), v)
		}
	}
	return &out
}

// setOf is the set of d that violations with action a go to: Warn,
// DryRun, or Deny for any other action, so that an action no rule should
// produce fails closed.
func (d *Decision) setOf(a Verdict) *[]Violation {
	switch a {
	case Warn:
		return &d.Warn
	case DryRun:
		return &d.DryRun
	}
	return &d.Deny
}

// violationKey is a Violation as a comparable value: violations with
// equal fields have equal keys.
type violationKey struct {
	rule, message, container, containerKind, volume, path, pipe, policies string
	subject, target, reason, remedy                                       string
	action                                                                Verdict
}

func (v Violation) key() violationKey {
	return violationKey{rule: v.Rule, message: v.Message, container: v.Container, containerKind: v.ContainerKind,
		volume: v.Volume, path: v.Path, pipe: v.Pipe, policies: strings.Join(v.Policies, "\x00"),
		subject: v.Subject, target: v.Target, reason: v.Reason, remedy: v.Remedy, action: v.Action}
}

// decisionOf reads the decision of policy generation generation from the
// results of its shipped rules' query: one result, binding violation, each
// violation going to the set its action names. An action that is none of
// deny, warn and dryrun counts as deny, as in the rules.
func decisionOf(rs rego.ResultSet, generation int64) (*Decision, error) {
	vs, err := resultViolations(rs, "violation")
	if err != nil {
		return nil, fmt.Errorf("policy generation %d: %w", generation, err)
	}
	d := &Decision{Generation: generation, Evaluated: true}
	for _, v := range vs {
		dst := d.setOf(v.Action)
		if dst == &d.Deny {
			v.Action = Deny
		}
		*dst = append(*dst, v)
	}
	return d, nil
}

// adminViolations reads the violations of admin-written rules of policy
// generation generation from the results of their query: one result,
// binding admin.
func adminViolations(rs rego.ResultSet, generation int64) ([]Violation, error) {
	vs, err := resultViolations(rs, "admin")
	if err != nil {
		return nil, fmt.Errorf("the admin rules of policy generation %d: %w", generation, err)
	}
	return vs, nil
}

// asTerm has a query's results left as rego values rather than turned into
// Go maps and slices, which violations reads directly.
var asTerm = rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil })

// resultViolations reads the set of violations bound to name in the one
// result of a query evaluated with asTerm.
func resultViolations(rs rego.ResultSet, name string) ([]Violation, error) {
	if len(rs) != 1 {
		return nil, fmt.Errorf("got %d results, want 1", len(rs))
	}
	t, ok := rs[0].Bindings[name].(*ast.Term)
	if !ok {
		return nil, fmt.Errorf("reading %s: result is %T, want a rego value", name, rs[0].Bindings[name])
	}
	vs, err := violations(t)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return vs, nil
}

// violations reads a set of violations as rego returns it. Every field is
// escaped (invisible.Escape): a rule's message may quote anything an object
// holds, and it goes on to admission responses, policy status, Events and
// PolicyReports, which must not carry characters a reader cannot see.
func violations(t *ast.Term) ([]Violation, error) {
	set, ok := t.Value.(ast.Set)
	if !ok {
		return nil, fmt.Errorf("result is of type %s, want a set", ast.ValueName(t.Value))
	}
	out := make([]Violation, 0, set.Len())
	err := set.Iter(func(el *ast.Term) error {
		obj, ok := el.Value.(ast.Object)
		if !ok {
			return fmt.Errorf("violation is of type %s, want an object", ast.ValueName(el.Value))
		}
		f := func(name string) string { return invisible.Escape(text(obj.Get(violationKeys[name]))) }
		v := Violation{
			Rule: f("rule"), Message: f("msg"), Action: Verdict(f("action")),
			Container: f("container"), ContainerKind: f("containerKind"), Volume: f("volume"), Path: f("path"), Pipe: f("pipe"),
			Subject: f("subject"), Target: f("target"), Reason: f("reason"), Remedy: f("remedy"),
		}
		if ps := obj.Get(violationKeys["policies"]); ps != nil {
			if ps, ok := ps.Value.(*ast.Array); ok {
				v.Policies = make([]string, 0, ps.Len())
				ps.Foreach(func(p *ast.Term) { v.Policies = append(v.Policies, invisible.Escape(text(p))) })
			}
		}
		if v.Message == "" {
			return errors.New("a violation has no message")
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// violationKeys are the fields of a violation object.
var violationKeys = func() map[string]*ast.Term {
	out := map[string]*ast.Term{}
	for _, k := range []string{"rule", "msg", "action", "container", "containerKind", "volume", "path", "pipe", "subject", "target", "reason", "remedy", "policies"} {
		out[k] = ast.StringTerm(k)
	}
	return out
}()

// text is a field of a violation as a string: a string as it is, anything
// else as rego writes it, and "" when it is missing or null.
func text(t *ast.Term) string {
	if t == nil {
		return ""
	}
	switch v := t.Value.(type) {
	case ast.String:
		return string(v)
	case ast.Null:
		return ""
	default:
		return v.String()
	}
}
