// Package apierr gives the agent's errors their gRPC shape.
//
// CSI Proxy answers every failure as codes.Unknown with the error text as the
// message, and CSI node plugins only test for a non-nil error. pipeguard keeps
// Unknown for failures of the host operation, so drivers see what they see
// from CSI Proxy, and gives refusals their own codes so that callers,
// metrics and audit can tell "refused" from "failed":
//
//   - InvalidArgument: a malformed input (a path that breaks a shape rule, a
//     volume id that is not one), refused before anything ran on the host;
//   - PermissionDenied: a well-formed input pipeguard does not allow (a path
//     outside the allowed roots or escaping them through a symlink, a service
//     not in the allowed list);
//   - Unimplemented: an API group that needs Windows, on another OS;
//   - DeadlineExceeded: a host operation did not finish (or, waiting for a
//     slot, did not start) within its deadline; the message names it;
//   - Unknown: the host operation failed.
//
// Every refusal is a Refusal: an error that names the rule that refused the
// request (confine.Refusal, Invalid, Denied, and the guard's own denials).
// Status turns one into a *RefusalError, whose message names the rule and
// which still wraps the original error, so that the guard, which sees the
// handler's error after it has its gRPC shape, records the request as denied
// by that rule wherever the refusal was decided.
package apierr
