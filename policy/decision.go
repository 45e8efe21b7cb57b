package policy

import (
	"fmt"
	"slices"
	"sort"
)

// Violation is one element of the deny, warn or dryrun set.
type Violation struct {
	Rule          string   `json:"rule"`
	Message       string   `json:"msg"`
	Action        string   `json:"action"`
	Container     string   `json:"container,omitempty"`
	ContainerKind string   `json:"containerKind,omitempty"`
	Volume        string   `json:"volume,omitempty"`
	Path          string   `json:"path,omitempty"`
	Pipe          string   `json:"pipe,omitempty"`
	Policies      []string `json:"policies,omitempty"`
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

// Denied reports whether the request must be rejected.
func (d *Decision) Denied() bool { return len(d.Deny) > 0 }

// Messages renders violations, sorted so that responses are stable.
func Messages(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	sort.Strings(out)
	return out
}

// with returns d with the violations of admin-written rules added to the
// set their action names, each once. d itself is left as it is, since the
// cache may share it.
func (d *Decision) with(admin []Violation) *Decision {
	out := *d
	out.Cached = false
	out.Evaluated = true
	for _, v := range admin {
		dst := &out.Deny
		switch v.Action {
		case "warn":
			dst = &out.Warn
		case "dryrun":
			dst = &out.DryRun
		}
		if !slices.ContainsFunc(*dst, v.equal) {
			*dst = append(slices.Clip(*dst), v)
		}
	}
	return &out
}

func (v Violation) equal(o Violation) bool {
	return v.Rule == o.Rule && v.Message == o.Message && v.Action == o.Action &&
		v.Container == o.Container && v.ContainerKind == o.ContainerKind && v.Volume == o.Volume &&
		v.Path == o.Path && v.Pipe == o.Pipe && slices.Equal(v.Policies, o.Policies)
}
