package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
)

// While every evaluation slot is taken (by rules that were stopped and
// have not yet returned, say), admin rules wait for one until their
// deadline, then fail closed saying what they waited for: the wait is not
// their time, so it is not counted as their timeout.
func TestAdminRulesWaitForASlotUntilTheirDeadline(t *testing.T) {
	ctx := context.Background()
	e, err := NewEngine(ctx, Options{MaxConcurrent: 1, DecisionCacheSize: 16, AdminRuleTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := csiProxyPolicy()
	p.ObjectMeta = metav1.ObjectMeta{Name: "fast"}
	p.Spec.Rego = []v1alpha1.RegoModule{{Name: "rules.rego", Source: "package pipeguard.admission.fast\n\nviolation contains \"no\" if input.request.username == \"bob\"\n"}}
	if _, err := e.Load(ctx, []v1alpha1.PipeAccessPolicy{p}); err != nil {
		t.Fatal(err)
	}
	in := cacheTestInput("team-a")
	evaluate(t, e, in) // the shipped rules' decision is remembered

	e.slots <- struct{}{} // every slot taken
	defer e.release()
	reviewCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = e.Evaluate(reviewCtx, in)
	want := `before evaluating the admin rules of PipeAccessPolicy "fast": waiting for an evaluation slot: context deadline exceeded`
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Evaluate with every slot taken: %v; want %q", err, want)
	}
	var are *AdminRuleError
	if errors.As(err, &are) || len(e.AdminRuleTimeouts()) != 0 || strings.Contains(err.Error(), "took longer") {
		t.Errorf("the wait for a slot counted as the rules' timeout: %v, %+v", err, e.AdminRuleTimeouts())
	}
}
