package policy

import (
	"fmt"
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
	// Cached is true when the decision was remembered from an earlier
	// evaluation of the same facts by the same generation, perhaps for
	// another namespace whose name is then written into the messages.
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
