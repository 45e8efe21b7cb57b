package policy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/pipeguard/pipeguard/internal/option"
)

// DefaultAdminRuleTimeout is how long the admin-written rules of one
// evaluation may run unless told otherwise. The API server waits 5 s for
// the webhook (its timeoutSeconds) and then applies the failure policy, so
// the budget leaves most of those 5 s for decoding, the shipped rules,
// waiting for an evaluation slot and the network; a rule that needs more
// than a second for one pod is broken, not thorough.
const DefaultAdminRuleTimeout = time.Second

// OptionAdminRuleTimeout is the key by which messages name
// Options.AdminRuleTimeout (see package option), so that a command shows
// the flag that sets it.
const OptionAdminRuleTimeout = "policy.admin-rule-timeout"

var adminRuleTimeoutOption = option.Name{Key: OptionAdminRuleTimeout, Field: "Options.AdminRuleTimeout"}

// ErrHeapBound is why admin rules that ran long were stopped when the
// heap neared the process's memory limit.
var ErrHeapBound = errors.New("the heap neared the memory limit while admin rules ran")

// AdminRuleError is the failure of one policy's admin-written rules on one
// input: they ran out of time (Timeout is set, Err is
// context.DeadlineExceeded), they ran long while the heap neared the
// memory limit (Heap is set, Err is ErrHeapBound), or OPA stopped them
// with an error, such as a builtin's under strict builtin errors. No decision was made: callers
// must not treat it as an allow.
type AdminRuleError struct {
	// Policy names the PipeAccessPolicy whose spec.rego failed.
	Policy string
	// Timeout is the budget the rules exceeded; zero for other errors.
	Timeout time.Duration
	// Heap is the size the heap had reached when the rules, running long,
	// were stopped because it neared MemoryLimit; Err is ErrHeapBound.
	Heap, MemoryLimit int64
	Err               error
	// namer names the options the message names, as the engine's
	// command does.
	namer option.Namer
}

func (e *AdminRuleError) text() option.Text {
	if e.Timeout > 0 {
		return option.Sprintf("the admin rules (spec.rego) of PipeAccessPolicy %q took longer than %s (%s) and were stopped; make them faster, or raise %s",
			e.Policy, adminRuleTimeoutOption, e.Timeout, adminRuleTimeoutOption)
	}
	if e.Heap > 0 {
		return option.Sprintf("the admin rules (spec.rego) of PipeAccessPolicy %q were stopped: while they ran, pipeguard-webhook's heap reached %d MiB, over three quarters of its memory limit (%d MiB); make them build smaller values, such as iterating with \"some x in\" rather than building arrays",
			e.Policy, e.Heap>>20, e.MemoryLimit>>20)
	}
	return option.Sprintf("the admin rules (spec.rego) of PipeAccessPolicy %q failed: %v; fix the rule the error points at", e.Policy, e.Err)
}

// Error is the message, naming options as the engine's Options.Namer does.
func (e *AdminRuleError) Error() string { return e.text().Render(e.namer) }

// Render is the message naming options as n does (an option.Renderer).
func (e *AdminRuleError) Render(n option.Namer) string { return e.text().Render(n) }

func (e *AdminRuleError) Unwrap() error { return e.Err }

// TimedOut reports whether the rules ran out of time.
func (e *AdminRuleError) TimedOut() bool { return e.Timeout > 0 }

// AdminRuleTimeouts counts the evaluations in which one policy's admin
// rules ran out of time on this engine.
type AdminRuleTimeouts struct {
	Policy string
	// Generation is the policy's metadata.generation whose rules ran out
	// of time most recently; Count, Since and Last are about it alone,
	// so that a fixed policy starts afresh.
	Generation int64
	Count      int64
	Since      time.Time
	Last       time.Time
	// Total counts every generation of the policy since the engine
	// started.
	Total int64
}

// timeouts is the engine's record of admin rules that ran out of time.
type timeouts struct {
	mu     sync.Mutex
	counts map[string]*AdminRuleTimeouts
	// notify has an element when a timeout was recorded since the last
	// receive.
	notify chan struct{}
}

func newTimeouts() *timeouts {
	return &timeouts{counts: map[string]*AdminRuleTimeouts{}, notify: make(chan struct{}, 1)}
}

func (t *timeouts) record(policy string, generation int64, at time.Time) {
	t.mu.Lock()
	c := t.counts[policy]
	if c == nil {
		c = &AdminRuleTimeouts{Policy: policy}
		t.counts[policy] = c
	}
	if c.Count == 0 || c.Generation != generation {
		c.Generation, c.Count, c.Since = generation, 0, at
	}
	c.Count++
	c.Total++
	c.Last = at
	t.mu.Unlock()
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// AdminRuleTimeouts lists, sorted by policy, the policies whose admin
// rules ran out of time on this engine, in admission and in the audit.
func (e *Engine) AdminRuleTimeouts() []AdminRuleTimeouts {
	e.timeouts.mu.Lock()
	defer e.timeouts.mu.Unlock()
	out := make([]AdminRuleTimeouts, 0, len(e.timeouts.counts))
	for _, c := range e.timeouts.counts {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Policy < out[j].Policy })
	return out
}

// AdminRuleTimedOut receives a value after admin rules ran out of time;
// timeouts since the last receive coalesce into one. It is for one
// listener, the one that reports them in the policies' status.
func (e *Engine) AdminRuleTimedOut() <-chan struct{} { return e.timeouts.notify }

// AdminRuleWarning is a clause for the status of generation of policy
// saying that its admin rules ran out of time on this engine, and what
// that did; "" when they did not.
func (e *Engine) AdminRuleWarning(policy string, generation int64) string {
	e.timeouts.mu.Lock()
	c, ok := e.timeouts.counts[policy]
	var t AdminRuleTimeouts
	if ok {
		t = *c
	}
	e.timeouts.mu.Unlock()
	if !ok || t.Generation != generation || t.Count == 0 {
		return ""
	}
	return option.Sprintf("the admin rules (spec.rego) of this policy took longer than %s (%s) in %d %s on this replica since %s (last at %s); those reviews were rejected and those audited objects reported as error; make the rules faster, or raise %s",
		adminRuleTimeoutOption, e.adminTimeout, t.Count, plural(t.Count, "evaluation", "evaluations"),
		t.Since.UTC().Format(time.RFC3339), t.Last.UTC().Format(time.RFC3339), adminRuleTimeoutOption).Render(e.namer)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// policyRules is one policy's admin-written rules, prepared to report
// their violations.
type policyRules struct {
	policy     string
	generation int64 // the policy's metadata.generation
	query      rego.PreparedEvalQuery
}

// evalResult is what one evaluation returned.
type evalResult struct {
	rs  rego.ResultSet
	err error
}

// evaluateAdmin returns the violations of the generation's admin-written
// rules on in, which they see whole. Each policy's rules are a query of
// their own, so that a failure names its policy; together they must end
// by the engine's admin rule timeout, counted from now.
func (e *Engine) evaluateAdmin(ctx context.Context, gen *Generation, in *Input, matches []bool) ([]Violation, error) {
	input := in.value(gen.policyTerms(in, matches))
	deadline := time.Now().Add(e.adminTimeout)
	var out []Violation
	for i := range gen.admin {
		vs, err := e.evaluatePolicy(ctx, gen, &gen.admin[i], input, deadline)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// evaluatePolicy evaluates one policy's admin rules on input, and gives up
// at deadline. The evaluation runs on a goroutine of its own that holds an
// evaluation slot until OPA returns: OPA stops at its next step once
// cancelled, but a builtin that is already running finishes its call, and
// the review must be answered before that, while the slot keeps the work
// that outlives its reviews within MaxConcurrent.
func (e *Engine) evaluatePolicy(ctx context.Context, gen *Generation, q *policyRules, input ast.Value, deadline time.Time) ([]Violation, error) {
	if err := e.acquireBy(ctx, deadline); err != nil {
		return nil, fmt.Errorf("before evaluating the admin rules of PipeAccessPolicy %q: %w", q.policy, err)
	}
	cancel := topdown.NewCancel()
	done := make(chan evalResult, 1)
	go func() {
		defer e.release()
		rs, err := q.query.Eval(ctx, rego.EvalParsedInput(input), rego.EvalMetrics(noMetrics), asTerm, rego.EvalExternalCancel(cancel))
		done <- evalResult{rs, err}
	}()
	timer := time.NewTimer(e.heap.wake(deadline))
	defer timer.Stop()
	var r evalResult
wait:
	for {
		select {
		case r = <-done:
			break wait
		case <-timer.C:
			if !time.Now().Before(deadline) {
				cancel.Cancel()
				e.timeouts.record(q.policy, q.generation, time.Now())
				return nil, &AdminRuleError{Policy: q.policy, Timeout: e.adminTimeout, Err: context.DeadlineExceeded, namer: e.namer}
			}
			if heap, over := e.heap.exceeded(); over {
				cancel.Cancel()
				return nil, &AdminRuleError{Policy: q.policy, Heap: heap, MemoryLimit: e.heap.limit, Err: ErrHeapBound, namer: e.namer}
			}
			timer.Reset(e.heap.wake(deadline))
		case <-ctx.Done():
			cancel.Cancel()
			return nil, fmt.Errorf("evaluating the admin rules of PipeAccessPolicy %q: %w", q.policy, ctx.Err())
		}
	}
	if r.err != nil {
		return nil, &AdminRuleError{Policy: q.policy, Err: r.err, namer: e.namer}
	}
	vs, err := adminViolations(r.rs, gen.Number)
	if err != nil {
		return nil, fmt.Errorf("internal error: PipeAccessPolicy %q: %w", q.policy, err)
	}
	return vs, nil
}

// acquireBy waits for an evaluation slot until deadline at the latest:
// waiting for a slot, which stopped rules may hold for a while, is not
// the rules' time, so it must not end as their timeout.
func (e *Engine) acquireBy(ctx context.Context, deadline time.Time) error {
	select {
	case e.slots <- struct{}{}:
		return nil
	default:
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return e.acquire(ctx)
}
