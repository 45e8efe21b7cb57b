package inflight

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Why says why the operation holding a key may still be running.
type Why int

// The reasons of a BusyError.
const (
	// Running: its host call has not returned.
	Running Why = iota
	// Unsettled: its deadline passed (or its caller went away) and the
	// settle check says the provider is not done, or it is held for
	// SettleTime.
	Unsettled
	// Checking: its deadline passed and another request is checking
	// whether the provider is done.
	Checking
	// CheckFailed: its deadline passed and the settle check failed.
	CheckFailed
	// CheckTimedOut: its deadline passed and the settle check did not
	// answer within SettleCheckTimeout.
	CheckTimedOut
)

// BusyError is the refusal of an operation on a key another operation
// holds. It answers codes.Aborted, as CSI does for an operation pending on
// the same volume: the caller retries later.
type BusyError struct {
	// Group and Op are the refused request's API group and method.
	Group, Op string
	Key       Key
	// Holder is the operation holding the key, and Started when it began.
	Holder  string
	Started time.Time
	Why     Why
	// CheckErr is the settle check's error, for CheckFailed.
	CheckErr error
	// CheckTimeout is the settle check's deadline, for CheckTimedOut.
	CheckTimeout time.Duration
}

func (e *BusyError) Error() string {
	var why string
	switch e.Why {
	case Running:
		why = ""
	case Checking:
		why = " (its deadline passed; the agent is checking whether the storage provider is done)"
	case CheckFailed:
		why = fmt.Sprintf(" (its deadline passed; checking whether the storage provider is done failed: %v)", e.CheckErr)
	case CheckTimedOut:
		why = fmt.Sprintf(" (its deadline passed; checking whether the storage provider is done did not answer within %v)", e.CheckTimeout)
	default:
		why = " (its deadline passed; the storage provider may still be working)"
	}
	return fmt.Sprintf("%s %s of %s is refused: %s of this %s started %s is still running%s, retry later",
		e.Group, e.Op, e.Key.Name, e.Holder, e.Key.Kind, e.Started.UTC().Format("15:04:05 UTC"), why)
}

// GRPCStatus is codes.Aborted with the message.
func (e *BusyError) GRPCStatus() *status.Status { return status.New(codes.Aborted, e.Error()) }
