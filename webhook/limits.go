package webhook

import (
	"errors"
	"fmt"
	"time"

	"github.com/pipeguard/pipeguard/policy"
)

// The bounds of one review. Anyone who can create a pod can make the API
// server send the webhook an object as large as it accepts, and the port
// takes reviews from any caller the network lets through, so every input
// of a review is bounded and what exceeds a bound gets a clear answer: a
// denial or an admission error, never an allow and never an unbounded
// cost. The table of docs/install.md ("Bounds") lists them; a test checks
// it against these constants.
const (
	// MaxReviewBytes bounds the body of an AdmissionReview. The API
	// server refuses request bodies above 3 MiB, so a review of a real
	// object fits; a larger body is refused with 413 before it is decoded.
	MaxReviewBytes = 3 << 20

	// MaxHostPathVolumes bounds the hostPath volumes of one object (a pod
	// or a workload's pod template). Real Windows CSI node plugins use up
	// to 19; an object with more is denied before any rule runs.
	MaxHostPathVolumes = 256

	// MaxHostPathMounts bounds the volumeMounts of hostPath volumes over
	// all containers of one object (init and ephemeral containers too).
	// Real Windows CSI node plugins use up to 33; an object with more is
	// denied before any rule runs.
	MaxHostPathMounts = 1024

	// MaxHostProcessContainers bounds the HostProcess containers of one
	// object: each reaches every host pipe and is a fact of its own. Real
	// Windows node DaemonSets run up to 4; an object with more is denied
	// before any rule runs.
	MaxHostProcessContainers = 256

	// MaxClaimVolumes bounds the persistentVolumeClaim volumes of one
	// object whose PersistentVolumes a review looks up (two GETs each,
	// while a protected PersistentVolume exists). Real workloads mount a
	// few; an object with more is denied before any rule runs.
	MaxClaimVolumes = 64

	// MaxHostPathBytes bounds the host paths one object mounts: the
	// lengths of each mount's hostPath with its subPath or subPathExpr,
	// summed over its mounts of hostPath volumes (a PersistentVolume's
	// one path). Each mount's facts and messages carry its path, so this
	// bounds what a review makes of the paths. Real Windows CSI node
	// plugins mount under 2 KiB; an object with more is denied before any
	// rule runs.
	MaxHostPathBytes = 256 << 10

	// DefaultReviewTimeout is how long a review may take when the API
	// server's call names no timeout; the API server's own default for a
	// webhook's timeoutSeconds.
	DefaultReviewTimeout = 10 * time.Second

	// MaxReviewTimeout bounds the timeout a call may ask for: the API
	// server's maximum timeoutSeconds.
	MaxReviewTimeout = 30 * time.Second

	// MaxLoggedDenialBytes bounds the messages of a denial (or of what a
	// dryrun policy would have denied) in its log line, and
	// MaxLoggedValueBytes each other value a review logs (the object's
	// name, the user, the peer, a dry run's path). The
	// response always carries the whole message; the log line keeps
	// whole messages while they fit, cuts the rest and says how many
	// bytes it left out.
	MaxLoggedDenialBytes = 4096
	MaxLoggedValueBytes  = 1024
)

// The bounds of the webhook's HTTP server (pipeguard-webhook's app).
// They close what a caller holds without sending a review: the API server
// sends a review's headers and body at once and within its timeout
// (timeoutSeconds, 5 s in config/webhook), so a connection slower than
// that is not the API server's.
const (
	// ReadHeaderTimeout bounds the reading of a request's headers, and
	// ReadTimeout the reading of the whole request, body included; a
	// connection that has not sent them in time is closed.
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 5 * time.Second
	// WriteTimeout bounds a review from the end of its headers to its
	// answer: longer than any deadline a review may have.
	WriteTimeout = MaxReviewTimeout + 5*time.Second
	// IdleTimeout closes a kept-alive connection that sends no request.
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 64 << 10
	// DefaultMaxConnections bounds the connections open at once, TLS
	// handshakes included; more wait in the listen queue.
	DefaultMaxConnections = 256
)

// overBoundError says that an object exceeds MaxHostPathVolumes,
// MaxHostPathMounts or MaxHostPathBytes. Decide denies such an object: it is the requester's
// object, not pipeguard's failure, and it is never allowed.
type overBoundError struct {
	// kind and name are the object's, filled in by input.
	kind, name string
	// what is counted ("hostPath volumes"), how many there are and the
	// bound.
	what       string
	count, max int
	// remedy says what to do instead.
	remedy string
}

func (e *overBoundError) Error() string {
	return fmt.Sprintf("has %d %s, more than the %d pipeguard reviews", e.count, e.what, e.max)
}

// tooManyVolumes and tooManyMounts are the errors of an object above the
// bounds.
func tooManyVolumes(n int) error {
	return &overBoundError{what: "hostPath volumes", count: n, max: MaxHostPathVolumes,
		remedy: "mount one hostPath volume in several containers, or split the workload"}
}

// tooLongPaths is the error of n bytes of host paths; what says where
// they are.
func tooLongPaths(n int, what string) error {
	return &overBoundError{what: "bytes " + what, count: n, max: MaxHostPathBytes,
		remedy: "mount shorter host paths, or fewer of them"}
}

func tooManyMounts(n int) error {
	return &overBoundError{what: "volumeMounts of hostPath volumes over its containers", count: n, max: MaxHostPathMounts,
		remedy: "mount fewer host paths per container, or split the workload"}
}

// overBound returns the denial of an object when err, from input, says it
// exceeds a bound.
func overBound(err error) (Outcome, bool) {
	var e *overBoundError
	if !errors.As(err, &e) {
		return Outcome{}, false
	}
	v := policy.Violation{
		Rule:   "too-many-host-paths",
		Action: policy.Deny,
		Message: fmt.Sprintf("%s %q %s; an object with more is denied without review, since no real workload needs that many; %s",
			e.kind, e.name, e.Error(), e.remedy),
	}
	d := &policy.Decision{Deny: []policy.Violation{v}}
	return Outcome{Verdict: policy.Deny, Decision: d, Denials: []string{v.String()}}, true
}
