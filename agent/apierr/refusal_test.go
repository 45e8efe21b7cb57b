package apierr

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// TestRefusals checks that every refusal keeps its rule and its origin
// through Status, so that the guard can record it as a denial, and that a
// host failure is no refusal.
func TestRefusals(t *testing.T) {
	escape := &confine.Refusal{Rule: confine.RuleSymlinkEscape, Field: "path", Path: "/k/l", Reason: `resolves through a symlink to "/etc"`}
	cases := map[string]struct {
		err  error
		rule string
		code codes.Code
		msg  string
	}{
		"symlink escape": {fmt.Errorf("mkdir: %w", escape), "confinement/symlink-escape", codes.PermissionDenied,
			`mkdir: path: path "/k/l" resolves through a symlink to "/etc" (confinement rule symlink-escape)`},
		"empty path": {&confine.Refusal{Rule: confine.RuleEmpty, Field: "path", Reason: "is empty"}, "confinement/empty", codes.InvalidArgument,
			`path: path "" is empty (confinement rule empty)`},
		"invalid input": {Invalidf("name", "is empty"), RuleInvalidInput, codes.InvalidArgument, "name: is empty (rule invalid-input)"},
		"service not allowed": {&Denied{Rule: "allowed-services", Msg: "service x is not allowed"}, "allowed-services", codes.PermissionDenied,
			"service x is not allowed (rule allowed-services)"},
		"refused": {Refused("service-account-token", "the token names another pod", codes.Unauthenticated), "service-account-token",
			codes.Unauthenticated, "the token names another pod (rule service-account-token)"},
		"wrapped refused": {fmt.Errorf("call: %w", Refused("gate-error", "no decision", codes.Internal)), "gate-error", codes.Internal,
			"call: no decision (rule gate-error)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Status(tc.err)
			s, _ := status.FromError(err)
			if s.Code() != tc.code || s.Message() != tc.msg || Code(tc.err) != tc.code {
				t.Fatalf("got %v %q, want %v %q", s.Code(), s.Message(), tc.code, tc.msg)
			}
			var ref Refusal
			if !errors.As(err, &ref) || ref.RefusalRule() != tc.rule {
				t.Fatalf("Status(err) is no refusal by rule %s: %#v", tc.rule, err)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("Status(err) lost the error it was made from")
			}
			if again := Status(err); again != err {
				t.Fatalf("Status is not idempotent: %v", again)
			}
		})
	}
	var cr *confine.Refusal
	if !errors.As(Status(fmt.Errorf("mkdir: %w", escape)), &cr) || cr != escape {
		t.Fatal("the confinement refusal is not reachable through Status")
	}
	host := errors.New("Format-Volume failed")
	var ref Refusal
	if errors.As(Status(host), &ref) {
		t.Fatal("a host failure is a refusal")
	}
}

func TestNameRule(t *testing.T) {
	cases := []struct{ msg, rule, want string }{
		{"x (rule allowed-services)", "allowed-services", "x (rule allowed-services)"},
		{`path "/a/.." has .. (confinement rule traversal)`, "confinement/traversal", `path "/a/.." has .. (confinement rule traversal)`},
		{"name: is empty", RuleInvalidInput, "name: is empty (rule invalid-input)"},
		{"no rule", "", "no rule"},
	}
	for _, tc := range cases {
		if got := nameRule(tc.msg, tc.rule); got != tc.want {
			t.Errorf("nameRule(%q, %q) = %q, want %q", tc.msg, tc.rule, got, tc.want)
		}
	}
}
