package policy_test

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
)

// bigRule builds an array of a hundred million numbers.
const bigRule = `package pipeguard.admission.big

violation contains "never" if count([i | some i in numbers.range(1, 100000000)]) < 0
`

func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// A rule that builds large values is stopped once the heap holds three
// quarters of the memory limit, long before its deadline, and the
// evaluation fails closed naming the policy; a rule that runs long without
// allocating is left to its deadline.
func TestAdminRulesStopNearTheMemoryLimit(t *testing.T) {
	ctx := context.Background()
	runtime.GC()
	// Three quarters of the limit: 64 MiB above what the heap holds now.
	limit := (heapBytes() + 64<<20) / 3 * 4
	e, err := policy.NewEngine(ctx, policy.Options{AdminRuleTimeout: time.Minute, MemoryLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Load(ctx, []v1alpha1.PipeAccessPolicy{regoPolicy("big", 1, bigRule)}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := e.Evaluate(ctx, podInput("team-a", nil, diskPipeMount()))
	var are *policy.AdminRuleError
	if !errors.As(err, &are) || are.Policy != "big" || are.TimedOut() || !errors.Is(err, policy.ErrHeapBound) {
		t.Fatalf("Evaluate = %+v, %v; want the admin rules of big stopped near the memory limit", d, err)
	}
	// Generous: the deadline is a minute away.
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("stopped after %s", took)
	}
	for _, words := range []string{
		`the admin rules (spec.rego) of PipeAccessPolicy "big" were stopped: while they ran, pipeguard-webhook's heap reached `,
		" MiB, over three quarters of its memory limit (",
		` MiB); make them build smaller values, such as iterating with "some x in" rather than building arrays`,
	} {
		if !strings.Contains(err.Error(), words) {
			t.Errorf("error %q does not say %q", err, words)
		}
	}
	if len(e.AdminRuleTimeouts()) != 0 {
		t.Errorf("a stop near the memory limit counted as a timeout: %+v", e.AdminRuleTimeouts())
	}

	// The guard watches the heap, not the time: a rule that allocates
	// nothing runs to its deadline.
	runtime.GC()
	e, err = policy.NewEngine(ctx, policy.Options{AdminRuleTimeout: 300 * time.Millisecond, MemoryLimit: (heapBytes() + 64<<20) / 3 * 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Load(ctx, []v1alpha1.PipeAccessPolicy{regoPolicy("slow", 1, slowRule)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Evaluate(ctx, podInput("team-a", nil, diskPipeMount())); !errors.As(err, &are) || !are.TimedOut() {
		t.Fatalf("the slow rule: %v; want it stopped at its deadline", err)
	}
}
