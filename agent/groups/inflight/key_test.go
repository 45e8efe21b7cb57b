package inflight

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// Keys compare without case where Windows does, and name what they hold.
func TestKeys(t *testing.T) {
	for _, c := range []struct {
		a, b Key
		same bool
		name string
	}{
		{Volume(volA), Volume(`\\?\VOLUME{452E318A-5CDE-421E-9831-B9853C521012}\`), true, volA},
		{Volume(volA), Volume(volB), false, volA},
		{Disk(2), Disk(2), true, "disk 2"},
		{Disk(2), Disk(12), false, "disk 2"},
		{Share(`\\srv\share`), Share(`\\SRV\Share`), true, `\\srv\share`},
		{Target("iqn.2020-01.com.example:a"), Target("IQN.2020-01.com.example:A"), true, "iqn.2020-01.com.example:a"},
		{Volume("2"), Disk(2), false, "2"},
	} {
		if (c.a.String() == c.b.String()) != c.same || c.a.Name != c.name {
			t.Errorf("%q vs %q: same %v, name %q; want %v, %q", c.a, c.b, c.a.String() == c.b.String(), c.a.Name, c.same, c.name)
		}
	}
}

// Returned tells a host call that returned from one that may go on.
func TestReturned(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{errors.New("Format-Volume failed: access denied"), true},
		{&limits.DeadlineError{Group: "volume", Op: "Format-Volume", Queued: true}, true},
		{fmt.Errorf("x: %w", &limits.DeadlineError{Group: "volume", Op: "Format-Volume", Queued: true}), true},
		{&limits.DeadlineError{Group: "volume", Op: "Format-Volume"}, false},
		{context.DeadlineExceeded, false},
		{fmt.Errorf("volume Format-Volume did not finish: the request ended first: %w", context.Canceled), false},
		{fmt.Errorf("volume Format-Volume did not start: the request ended while it waited for a slot: %w", context.Canceled), false},
	} {
		if got := Returned(c.err); got != c.want {
			t.Errorf("Returned(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
