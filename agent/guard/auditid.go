package guard

// The audit ID a client can ask for, to find its call in the audit log.

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// AuditIDHeader is the response header carrying the request's audit ID. It
// is sent only to a client that asks for it with AuditIDRequestHeader.
const AuditIDHeader = "audit-id"

// AuditIDRequestHeader is the request metadata key with which a client asks
// for the AuditIDHeader response header. Any value counts, an empty one
// included, and the key counts in any letter case; the value is never read
// nor echoed. Clients that do not send it (the csi-proxy client libraries)
// get no extra header; every request's audit ID is in the audit log either
// way.
const AuditIDRequestHeader = "pipeguard-audit-id-request"

// asksAuditID reports whether the call's client asked for its audit ID. It
// allocates nothing when the client did not: ValueFromIncomingContext finds
// the key by exact and then case-insensitive comparison without copying
// the metadata, where FromIncomingContext would copy every key and value.
func asksAuditID(ctx context.Context) bool {
	// A key that is present yields a non-nil slice, even with no values.
	return metadata.ValueFromIncomingContext(ctx, AuditIDRequestHeader) != nil
}

// sendAuditID sets the call's audit ID response header when the client
// asked for it. The header goes out with the answer, a refusal included.
func sendAuditID(ctx context.Context, auditID string) {
	if !asksAuditID(ctx) {
		return
	}
	// SetHeader fails only when the call has no transport stream (a call
	// made in-process) or its headers are already sent, which cannot be
	// before the guard's first step; the record holds the ID either way.
	_ = grpc.SetHeader(ctx, metadata.MD{AuditIDHeader: {auditID}})
}
