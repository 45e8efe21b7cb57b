package apierr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// RuleInvalidInput names the rule that refuses a malformed input other than
// a path (paths are refused by the confinement rules).
const RuleInvalidInput = "invalid-input"

// Refusal is an error that refuses a request under a named rule: a path
// confinement refuses, a malformed input, a service not allowed, a token
// that must not be used. The guard records every call whose error is, or
// wraps, a Refusal as denied by that rule, wherever it was decided.
type Refusal interface {
	error
	// RefusalRule is the rule's id as audit records and metrics name it,
	// e.g. "allowed-services" or "confinement/symlink-escape".
	RefusalRule() string
}

// Invalid is an input that failed validation before reaching the host.
type Invalid struct {
	// Field is the request field, e.g. "volume_id".
	Field string
	// Msg says what was wrong and what to send instead.
	Msg string
}

func (e *Invalid) Error() string { return e.Field + ": " + e.Msg }

// RefusalRule is RuleInvalidInput.
func (e *Invalid) RefusalRule() string { return RuleInvalidInput }

// Invalidf returns an *Invalid for field.
func Invalidf(field, format string, args ...any) error {
	return &Invalid{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Denied is a well-formed request that pipeguard does not allow.
type Denied struct {
	// Rule names the rule that denied it, e.g. "allowed-services".
	Rule string
	// Msg says what was denied and how to allow it.
	Msg string
}

func (e *Denied) Error() string { return e.Msg + " (rule " + e.Rule + ")" }

// RefusalRule is the rule that denied the request.
func (e *Denied) RefusalRule() string { return e.Rule }

// RefusalError is a refusal in its gRPC shape: the rule, the code, and a
// message that names the rule. Status turns every Refusal into one and
// keeps the original error behind it (Unwrap), so errors.As still finds
// the confinement refusal or validation error after the error has its code.
type RefusalError struct {
	rule  string
	msg   string
	code  codes.Code
	cause error
}

// Refused returns the refusal of a request under rule, answered with code.
// reason says what was refused and how to get it allowed; the message
// names the rule.
func Refused(rule, reason string, code codes.Code) error {
	return &RefusalError{rule: rule, msg: nameRule(reason, rule), code: code}
}

func (e *RefusalError) Error() string { return e.msg }

// RefusalRule is the rule that refused the request.
func (e *RefusalError) RefusalRule() string { return e.rule }

// Code is the gRPC code the client gets.
func (e *RefusalError) Code() codes.Code { return e.code }

// GRPCStatus is the status the client gets.
func (e *RefusalError) GRPCStatus() *status.Status { return status.New(e.code, e.msg) }

// Unwrap returns the error the refusal was made from, if any.
func (e *RefusalError) Unwrap() error { return e.cause }

// nameRule returns msg naming rule: unchanged when it already says
// "rule <rule>", or "rule <last part of rule>" as the confinement refusals
// do ("(confinement rule traversal)"), else with " (rule <rule>)" appended.
func nameRule(msg, rule string) string {
	if rule == "" || strings.Contains(msg, "rule "+rule) || strings.Contains(msg, "rule "+rule[strings.LastIndex(rule, "/")+1:]) {
		return msg
	}
	return msg + " (rule " + rule + ")"
}

// AsRefusal returns err in its gRPC shape when it is, or wraps, a Refusal:
// err itself when it is a *RefusalError, else a *RefusalError whose message
// names the rule and which wraps err.
func AsRefusal(err error) (*RefusalError, bool) {
	if rf, ok := err.(*RefusalError); ok {
		return rf, true
	}
	var ref Refusal
	if !errors.As(err, &ref) {
		return nil, false
	}
	rule := ref.RefusalRule()
	return &RefusalError{rule: rule, msg: nameRule(err.Error(), rule), code: Code(err), cause: err}, true
}

// NeedsWindows is the status of every call to an API group that only works
// on Windows, on another OS.
func NeedsWindows(group, version, method, goos string) error {
	return status.Errorf(codes.Unimplemented,
		"%s %s %s needs Windows: pipeguard-agent serves the %s API group only on Windows nodes, and this one runs %s",
		group, version, method, group, goos)
}

// Code is the gRPC code for err, following the package rules.
func Code(err error) codes.Code {
	var (
		rf    *RefusalError
		ref   *confine.Refusal
		inv   *Invalid
		other Refusal
	)
	switch {
	case err == nil:
		return codes.OK
	case errors.As(err, &rf):
		return rf.code
	case errors.As(err, &ref):
		if ref.Rule.Malformed() {
			return codes.InvalidArgument
		}
		return codes.PermissionDenied
	case errors.As(err, &inv):
		return codes.InvalidArgument
	case errors.As(err, &other):
		return codes.PermissionDenied
	case errors.Is(err, context.DeadlineExceeded):
		// A host call past its deadline (limits.DeadlineError) or the
		// request's own.
		return codes.DeadlineExceeded
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Unknown
}

// Status turns err into a gRPC status error with the code from Code and the
// error text as message. A Refusal becomes a *RefusalError whose message
// names its rule and which wraps err. Other errors that already carry a
// status keep it.
func Status(err error) error {
	if err == nil {
		return nil
	}
	if rf, ok := AsRefusal(err); ok {
		return rf
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(Code(err), err.Error())
}
