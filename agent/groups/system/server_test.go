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
