package system

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/pipeguard/pipeguard/agent/apierr"
	hostsys "github.com/pipeguard/pipeguard/agent/hostops/system"
)

// A host refusal of a service that is not allowed is answered as a denial
// under its rule, with the same words, wrapped in context or not.
func TestHostRefusalIsADenial(t *testing.T) {
	na := &hostsys.NotAllowedError{Rule: RuleAllowedServices, Msg: `StopService of service "a" with force refused`}
	for name, err := range map[string]error{
		"bare":    na,
		"wrapped": fmt.Errorf("StopService: %w", na),
	} {
		t.Run(name, func(t *testing.T) {
			got := hostError(err)
			var d *apierr.Denied
			if !errors.As(got, &d) || d.Rule != RuleAllowedServices || d.Msg != na.Msg {
				t.Fatalf("hostError(%v) = %#v, want the denial", err, got)
			}
			if got.Error() != err.Error() {
				t.Errorf("message %q, want %q", got.Error(), err.Error())
			}
			if c := apierr.Code(got); c != codes.PermissionDenied {
				t.Errorf("code %v, want PermissionDenied", c)
			}
		})
	}
	other := errors.New("Access is denied.")
	if got := hostError(other); got != other {
		t.Errorf("hostError(other) = %v, want it as it is", got)
	}
}

// TestRefusalNamesTheAllowedServices: the refusal of a service that is not
// allowed names the allowed services by their Go name, and by the
// command's flag once the command names the options.
func TestRefusalNamesTheAllowedServices(t *testing.T) {
	flags := func(key string) (string, bool) {
		f, ok := map[string]string{OptionAllowedServices: "--allowed-service"}[key]
		return f, ok
	}
	cases := map[string]struct {
		namer func(string) (string, bool)
		want  string
	}{
		"the library's own words": {want: `StopService of service "WinDefend" refused: it is not an allowed service (allowed: [csiproxy-helper]); to allow it, start the agent with AllowedServices=WinDefend`},
		"named by the command":    {namer: flags, want: `StopService of service "WinDefend" refused: it is not an allowed service (allowed: [csiproxy-helper]); to allow it, start the agent with --allowed-service=WinDefend`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := New(hostsys.Native{}, []string{"csiproxy-helper"})
			if err != nil {
				t.Fatal(err)
			}
			err = s.NameOptions(tc.namer).checkAllowed("StopService", "WinDefend")
			var d *apierr.Denied
			if !errors.As(err, &d) || d.Rule != RuleAllowedServices || d.Msg != tc.want {
				t.Fatalf("refusal %#v\nwant %q", err, tc.want)
			}
		})
	}
}
