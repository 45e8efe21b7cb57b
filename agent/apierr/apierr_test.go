package apierr

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

func TestStatus(t *testing.T) {
	cases := map[string]struct {
		err  error
		code codes.Code
		msg  string
	}{
		"host failure is Unknown, like CSI Proxy": {errors.New("Format-Volume failed"), codes.Unknown, "Format-Volume failed"},
		"malformed path": {fmt.Errorf("mkdir: %w", &confine.Refusal{Rule: confine.RuleTraversal, Field: "path", Path: "/a/..", Reason: "has .."}),
			codes.InvalidArgument, `mkdir: path: path "/a/.." has .. (confinement rule traversal)`},
		"outside roots": {&confine.Refusal{Rule: confine.RuleOutsideRoots, Field: "path", Path: "/etc", Reason: "is outside"},
			codes.PermissionDenied, `path: path "/etc" is outside (confinement rule outside-roots)`},
		"invalid input": {Invalidf("volume_id", "%q is not a volume id", "x"), codes.InvalidArgument, `volume_id: "x" is not a volume id (rule invalid-input)`},
		"denied":        {&Denied{Rule: "allowed-services", Msg: "service x is not allowed"}, codes.PermissionDenied, "service x is not allowed (rule allowed-services)"},
		"host deadline": {fmt.Errorf("formatting volume: %w", &limits.DeadlineError{Group: "disk", Op: "partitioning disk", Timeout: 90 * time.Second, Setting: "--host-call-timeout-disk"}),
			codes.DeadlineExceeded, "formatting volume: disk partitioning disk did not finish within 1m30s (host operation deadline; --host-call-timeout-disk)"},
		"request deadline": {fmt.Errorf("Get-Disk: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "Get-Disk: context deadline exceeded"},
		"status kept":      {NeedsWindows("disk", "v1", "Rescan", "linux"), codes.Unimplemented, "disk v1 Rescan needs Windows: pipeguard-agent serves the disk API group only on Windows nodes, and this one runs linux"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := status.FromError(Status(tc.err))
			if s.Code() != tc.code || s.Message() != tc.msg {
				t.Fatalf("got %v %q, want %v %q", s.Code(), s.Message(), tc.code, tc.msg)
			}
		})
	}
	if Status(nil) != nil {
		t.Fatal("Status(nil) != nil")
	}
}
