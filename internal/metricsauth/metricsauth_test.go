package metricsauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"
)

// TestMetricsTokenCache: the memory of token reviews is bounded, keyed by
// hashes, shared by concurrent scrapes, and never remembers a failure.
func TestMetricsTokenCache(t *testing.T) {
	ctx := context.Background()
	refuse := func(asks *atomic.Int64) func(context.Context, string) (tokenAnswer, error) {
		return func(context.Context, string) (tokenAnswer, error) {
			asks.Add(1)
			return tokenAnswer{reason: "invalid bearer token"}, nil
		}
	}

	t.Run("ten times its size in distinct tokens: it keeps its size", func(t *testing.T) {
		const size = 16
		c := newTokenCache(size, time.Minute, time.Minute, clock.RealClock{})
		var asks atomic.Int64
		for i := range 10 * size {
			if a, _, err := c.review(ctx, fmt.Sprintf("junk-%d", i), refuse(&asks)); err != nil || a.user != nil {
				t.Fatalf("review: %v, %v", a, err)
			}
			if n := c.len(); n > size {
				t.Fatalf("after %d tokens the cache holds %d answers, more than its size %d", i+1, n, size)
			}
		}
		if n := asks.Load(); n != 10*size {
			t.Fatalf("%d reviews for %d distinct tokens", n, 10*size)
		}
		for _, k := range c.answers.Keys() {
			if _, ok := k.(tokenKey); !ok {
				t.Fatalf("a key of type %T: the cache must hold hashes, never tokens", k)
			}
		}
		// The oldest was evicted and is asked again; the newest is not.
		c.review(ctx, fmt.Sprintf("junk-%d", 10*size-1), refuse(&asks)) //nolint:errcheck // counted below
		c.review(ctx, "junk-0", refuse(&asks))                          //nolint:errcheck // counted below
		if n := asks.Load(); n != 10*size+1 {
			t.Fatalf("%d reviews, want %d: one for the evicted token only", n, 10*size+1)
		}
	})

	t.Run("one token scraped 100 times: one review", func(t *testing.T) {
		c := newTokenCache(16, time.Minute, time.Minute, clock.RealClock{})
		var asks atomic.Int64
		for range 100 {
			c.review(ctx, "junk", refuse(&asks)) //nolint:errcheck // counted below
		}
		if n := asks.Load(); n != 1 {
			t.Fatalf("%d reviews", n)
		}
	})

	t.Run("one token scraped 50 times at once: one review", func(t *testing.T) {
		c := newTokenCache(16, time.Minute, time.Minute, clock.RealClock{})
		var asks atomic.Int64
		// The review is held until the other 49 scrapes have joined it.
		release := make(chan struct{})
		held := func(ctx context.Context, tok string) (tokenAnswer, error) {
			<-release
			return refuse(&asks)(ctx, tok)
		}
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if a, _, err := c.review(ctx, "junk", held); err != nil || a.user != nil {
					t.Errorf("review: %v, %v", a, err)
				}
			})
		}
		waiters := func() int {
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, f := range c.inflight {
				return f.waiters
			}
			return 0
		}
		// A poll under a deadline for the 49 joins; the pause only spares
		// the CPU.
		for deadline := time.Now().Add(10 * time.Second); waiters() < 49; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				close(release)
				wg.Wait()
				t.Fatalf("%d of 49 concurrent scrapes joined the review in flight; %d reviews", waiters(), asks.Load())
			}
		}
		close(release)
		wg.Wait()
		if n := asks.Load(); n != 1 {
			t.Fatalf("%d reviews", n)
		}
	})

	t.Run("a failed review is not remembered", func(t *testing.T) {
		c := newTokenCache(16, time.Minute, time.Minute, clock.RealClock{})
		var asks atomic.Int64
		fail := func(context.Context, string) (tokenAnswer, error) {
			asks.Add(1)
			return tokenAnswer{}, errors.New("connection refused")
		}
		for range 3 {
			if _, _, err := c.review(ctx, "tok", fail); err == nil {
				t.Fatal("no error")
			}
		}
		if n := asks.Load(); n != 3 {
			t.Fatalf("%d reviews for 3 failing scrapes", n)
		}
	})

	t.Run("answers expire", func(t *testing.T) {
		clk := testclock.NewFakeClock(time.Now())
		c := newTokenCache(16, time.Minute, time.Second, clk)
		var asks atomic.Int64
		c.review(ctx, "junk", refuse(&asks)) //nolint:errcheck // counted below
		clk.Step(time.Second)
		c.review(ctx, "junk", refuse(&asks)) //nolint:errcheck // counted below
		if n := asks.Load(); n != 1 {
			t.Fatalf("%d reviews, want 1: the refusal was forgotten within its TTL", n)
		}
		clk.Step(time.Millisecond)
		c.review(ctx, "junk", refuse(&asks)) //nolint:errcheck // counted below
		if n := asks.Load(); n != 2 {
			t.Fatalf("%d reviews, want 2: the refusal outlived its TTL", n)
		}
		authn := func(context.Context, string) (tokenAnswer, error) {
			asks.Add(1)
			return tokenAnswer{user: &user.DefaultInfo{Name: "prometheus"}}, nil
		}
		c.review(ctx, "valid", authn) //nolint:errcheck // counted below
		clk.Step(2 * time.Second)
		c.review(ctx, "valid", authn) //nolint:errcheck // counted below
		if n := asks.Load(); n != 3 {
			t.Fatalf("%d reviews, want 3: an authenticated token is remembered for its own TTL", n)
		}
		clk.Step(time.Minute)
		c.review(ctx, "valid", authn) //nolint:errcheck // counted below
		if n := asks.Load(); n != 4 {
			t.Fatalf("%d reviews, want 4: the authenticated token outlived its TTL", n)
		}
	})
}

// TestMetricsRefusalLogSampling: a burst of lines, then one per 10
// seconds that counts those held back.
func TestMetricsRefusalLogSampling(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	s := sampled{limit: flowcontrol.NewTokenBucketRateLimiterWithClock(0.1, 5, clk)}
	for i := range 5 {
		if ok, dropped := s.allow(); !ok || dropped != 0 {
			t.Fatalf("line %d: %v, %d", i, ok, dropped)
		}
	}
	for i := range 1000 {
		if ok, _ := s.allow(); ok {
			t.Fatalf("line %d of a flood logged", 5+i)
		}
	}
	clk.Step(10 * time.Second)
	if ok, dropped := s.allow(); !ok || dropped != 1000 {
		t.Fatalf("after 10 seconds: %v, %d lines not logged; want a line that counts 1000", ok, dropped)
	}
	if ok, _ := s.allow(); ok {
		t.Fatal("a second line in the same 10 seconds")
	}
}

// TestMetricsBearerToken: what counts as a bearer token.
func TestMetricsBearerToken(t *testing.T) {
	for name, tc := range map[string]struct {
		header, token string
		ok            bool
	}{
		"bearer":            {"Bearer abc", "abc", true},
		"scheme any case":   {"bearer abc", "abc", true},
		"no header":         {"", "", false},
		"basic":             {"Basic dXNlcjpwYXNz", "", false},
		"bearer, no token":  {"Bearer ", "", false},
		"bearer, no space":  {"Bearer", "", false},
		"token with spaces": {"Bearer  abc ", "abc", true},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			token, ok := bearerToken(r)
			if ok != tc.ok || (ok && token != tc.token) {
				t.Fatalf("bearerToken(%q) = %q, %v", tc.header, token, ok)
			}
		})
	}
}

// TestAPIServerUnreachable: when the API server cannot be reached, a
// scrape with a token fails as an internal error, neither served nor
// refused as if the token were bad; the answer does not name the API
// server, and the failure is not remembered.
func TestAPIServerUnreachable(t *testing.T) {
	f, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, logr.Discard(), Options{Component: "pipeguard-agent"})
	if err != nil {
		t.Fatal(err)
	}
	h := f.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("a scrape was let through without a review") }))
	for range 2 {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer a-token")
		h.ServeHTTP(w, req)
		want := "internal error: the API server could not be asked to review the token; the log of pipeguard-agent has the cause. Retry the scrape"
		if w.Code != http.StatusServiceUnavailable || strings.TrimSpace(w.Body.String()) != want {
			t.Fatalf("status %d, body %.300q; want 503 %q", w.Code, w.Body.String(), want)
		}
		if f.Remembered() != 0 {
			t.Fatalf("a failed review is remembered")
		}
	}
}
