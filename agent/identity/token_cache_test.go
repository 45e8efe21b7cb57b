package identity

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func newCacheVerifier(t *testing.T, reviews *atomic.Int32, clk *clocktesting.FakeClock) *TokenVerifier {
	t.Helper()
	cs := apiServer(t, reviews)
	v, err := NewTokenVerifier(TokenOptions{Reviewer: cs.AuthenticationV1().TokenReviews(), Audience: DefaultTokenAudience, NodeName: "node-1",
		CacheTTL: 30 * time.Second, FailureTTL: 2 * time.Second, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTokenCache: an accepted answer is reused for CacheTTL and not a
// moment longer, a refusal for FailureTTL only, a failed TokenReview is
// never remembered, and a flood of distinct tokens cannot grow the cache
// past its bound (the least recently used answer goes first).
func TestTokenCache(t *testing.T) {
	var reviews atomic.Int32
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	v := newCacheVerifier(t, &reviews, clk)
	ctx := context.Background()
	n := 0
	review := func(token string, wantReviews int32) {
		t.Helper()
		// Each review comes from a caller of its own: this test is about
		// the cache, not the per-caller budget.
		n++
		c := &Caller{PodUID: fmt.Sprintf("pod-%d", n), UID: -1}
		if _, err := v.Review(ctx, c, token); err != nil && !strings.Contains(err.Error(), "connection refused") {
			var rej *Rejection
			if !errors.As(err, &rej) {
				t.Fatal(err)
			}
		}
		if got := reviews.Load(); got != wantReviews {
			t.Fatalf("after reviewing %q: %d TokenReviews, want %d", token, got, wantReviews)
		}
	}
	review("driver-token", 1)
	clk.Step(29 * time.Second)
	review("driver-token", 1)
	clk.Step(time.Second + time.Nanosecond)
	review("driver-token", 2) // the TTL is over: asked again

	// A refusal is remembered briefly: a forged token resent does not cost
	// a TokenReview per call, and a token the API server accepts a moment
	// later is not refused for long.
	review("forged", 3)
	clk.Step(2 * time.Second)
	review("forged", 3)
	clk.Step(time.Nanosecond)
	review("forged", 4)

	// The API server being unreachable is not an answer.
	review("unreachable", 5)
	review("unreachable", 6)

	// MaxCachedTokens distinct tokens push the first ones out, and the
	// cache never holds more.
	for i := range MaxCachedTokens {
		review(fmt.Sprintf("flood-%d", i), int32(7+i))
	}
	if n := len(v.cache.Keys()); n != MaxCachedTokens {
		t.Fatalf("the cache holds %d answers, want its bound %d", n, MaxCachedTokens)
	}
	review("driver-token", int32(7+MaxCachedTokens))
}

// jwt makes a token whose payload says exp, as the API server's do; the
// fake API server accepts tokens of the form "driver-token".
func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + ".sig"
}

// TestTokenCacheNeverPastExpiry: an accepted token's answer is not reused
// after the token's own "exp", even within CacheTTL.
func TestTokenCacheNeverPastExpiry(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cases := map[string]struct {
		token string
		want  time.Duration
	}{
		"expires within the TTL":  {jwt(fmt.Sprintf(`{"exp":%d}`, now.Add(10*time.Second).Unix())), 10 * time.Second},
		"expires after the TTL":   {jwt(fmt.Sprintf(`{"exp":%d}`, now.Add(time.Hour).Unix())), 30 * time.Second},
		"already expired":         {jwt(fmt.Sprintf(`{"exp":%d}`, now.Add(-time.Second).Unix())), -time.Second},
		"no exp":                  {jwt(`{"sub":"x"}`), 30 * time.Second},
		"exp not a number":        {jwt(`{"exp":"soon"}`), 30 * time.Second},
		"payload not base64":      {"a.%%%.c", 30 * time.Second},
		"not a JWT":               {"driver-token", 30 * time.Second},
		"payload not JSON":        {"a." + base64.RawURLEncoding.EncodeToString([]byte("{")) + ".c", 30 * time.Second},
		"exp a fraction, cut off": {jwt(fmt.Sprintf(`{"exp":%d.9}`, now.Add(3*time.Second).Unix())), 3 * time.Second},
		"exp absurd":              {jwt(`{"exp":1e300}`), 30 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := successTTL(tc.token, now, 30*time.Second); got != tc.want {
				t.Fatalf("reused for %s, want %s", got, tc.want)
			}
		})
	}
}

// TestTokenBudgetPerCaller: a caller's distinct junk tokens cost at most
// its burst of TokenReviews, after which they are refused locally with a
// message naming the caller and the bound, while another caller's token is
// still reviewed; a cached token costs no budget; the budget refills with
// time. Callers are told apart by pod, else by user, never by pid.
func TestTokenBudgetPerCaller(t *testing.T) {
	var reviews atomic.Int32
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	v := newCacheVerifier(t, &reviews, clk)
	ctx := context.Background()
	hostile := &Caller{PID: 7, PodMapped: true, PodUID: "uid-hostile", UID: 0}
	driver := &Caller{PID: 8, PodMapped: true, PodUID: podUID, UID: 0}
	wantMsg := "pod uid uid-hostile sent more new ServiceAccount tokens than the agent reviews for one caller (5 at once, then 1 a second); this token was not reviewed: send the pod's own projected token, which the agent remembers once reviewed, and retry later"
	throttledN := 0
	for i := range 200 {
		_, err := v.Review(ctx, hostile, fmt.Sprintf("junk-%d", i))
		var thr *Throttled
		switch {
		case errors.As(err, &thr):
			throttledN++
			if thr.Error() != wantMsg || thr.RefusalRule() != RuleServiceAccountToken {
				t.Fatalf("throttled %q (rule %s), want %q", thr, thr.RefusalRule(), wantMsg)
			}
		case i >= TokenReviewsPerCallerBurst:
			t.Fatalf("junk token %d: %v, want it refused without a review", i, err)
		}
	}
	if throttledN != 200-TokenReviewsPerCallerBurst || reviews.Load() != TokenReviewsPerCallerBurst {
		t.Fatalf("%d refused locally, %d TokenReviews; want %d and %d", throttledN, reviews.Load(), 200-TokenReviewsPerCallerBurst, TokenReviewsPerCallerBurst)
	}
	// The driver's token is reviewed: the hostile caller spent only its own budget.
	if _, err := v.Review(ctx, driver, "driver-token"); err != nil {
		t.Fatalf("driver: %v", err)
	}
	// Resending a reviewed junk token costs nothing, even over budget.
	if _, err := v.Review(ctx, hostile, "junk-0"); err == nil || !strings.Contains(err.Error(), "invalid bearer token") {
		t.Fatalf("cached junk: %v, want the cached refusal", err)
	}
	// Another process of the same pod shares the pod's budget.
	if _, err := v.Review(ctx, &Caller{PID: 99, PodMapped: true, PodUID: "uid-hostile", UID: 1}, "junk-new"); !errors.As(err, new(*Throttled)) {
		t.Fatalf("same pod, other pid: %v, want throttled", err)
	}
	// Host processes are told apart by user: a new pid is no new budget.
	for pid := range TokenReviewsPerCallerBurst + 1 {
		_, err := v.Review(ctx, &Caller{PID: 1000 + pid, PodMapped: true, UID: 1001}, fmt.Sprintf("host-junk-%d", pid))
		if thr := (*Throttled)(nil); errors.As(err, &thr) != (pid == TokenReviewsPerCallerBurst) ||
			(thr != nil && !strings.HasPrefix(thr.Msg, "user uid 1001 sent more")) {
			t.Fatalf("host pid %d: %v", 1000+pid, err)
		}
	}
	if want := int32(2*TokenReviewsPerCallerBurst + 1); reviews.Load() != want {
		t.Fatalf("%d TokenReviews, want %d", reviews.Load(), want)
	}
	// One second refills one review.
	clk.Step(time.Second)
	if _, err := v.Review(ctx, hostile, "junk-after"); errors.As(err, new(*Throttled)) {
		t.Fatalf("after a second: %v, want a review", err)
	}
	if _, err := v.Review(ctx, hostile, "junk-after-2"); !errors.As(err, new(*Throttled)) {
		t.Fatalf("second within the second: %v, want throttled", err)
	}
}

// TestTokenTooLong: an oversize token is refused before any review.
func TestTokenTooLong(t *testing.T) {
	var reviews atomic.Int32
	v := newCacheVerifier(t, &reviews, clocktesting.NewFakeClock(time.Unix(0, 0)))
	_, err := v.Review(context.Background(), &Caller{PodUID: "p"}, strings.Repeat("a", MaxTokenBytes+1))
	want := fmt.Sprintf("the ServiceAccount token is %d bytes, more than the %d the agent reviews; send a projected ServiceAccount token", MaxTokenBytes+1, MaxTokenBytes)
	if !errors.As(err, new(*Rejection)) || err.Error() != want || reviews.Load() != 0 {
		t.Fatalf("err %v, %d reviews; want %q and none", err, reviews.Load(), want)
	}
}

// TestTokenBudgetCallersBounded: a flood of caller keys keeps at most
// MaxTokenCallers budgets.
func TestTokenBudgetCallersBounded(t *testing.T) {
	l := newLimiters(clocktesting.NewFakeClock(time.Unix(0, 0)))
	for i := range MaxTokenCallers + 10 {
		l.allow(fmt.Sprintf("pod uid %d", i))
	}
	if n := len(l.lru.Keys()); n != MaxTokenCallers {
		t.Fatalf("%d budgets kept, want %d", n, MaxTokenCallers)
	}
}
