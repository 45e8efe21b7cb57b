package apierr

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// Invalid is an input that failed validation before reaching the host.
type Invalid struct {
	// Field is the request field, e.g. "volume_id".
	Field string
	// Msg says what was wrong and what to send instead.
	Msg string
}

func (e *Invalid) Error() string { return e.Field + ": " + e.Msg }

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
		ref *confine.Refusal
		inv *Invalid
		den *Denied
	)
	switch {
	case err == nil:
		return codes.OK
	case errors.As(err, &ref):
		if ref.Rule.Malformed() {
			return codes.InvalidArgument
		}
		return codes.PermissionDenied
	case errors.As(err, &inv):
		return codes.InvalidArgument
	case errors.As(err, &den):
		return codes.PermissionDenied
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Unknown
}

// Status turns err into a gRPC status error with the code from Code and the
// error text as message. Errors that already carry a status keep it.
func Status(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(Code(err), err.Error())
}
