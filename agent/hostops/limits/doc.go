// Package limits bounds the host calls of the agent: every call of a group
// has a deadline (Limits.Timeout) and a slot of a pool of Concurrency slots,
// shared between callers so that one caller (CallerKey) holds at most its
// share of them. Bounded applies the limits of one group and of its classes
// of operations; a call past its own deadline is a *DeadlineError, which
// names the operation and what sets the deadline (Limits.Setting).
package limits
