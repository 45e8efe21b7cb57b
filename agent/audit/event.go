package audit

import (
	"slices"
	"strconv"
	"time"
)

// The Event shape follows audit.k8s.io/v1.
const (
	Kind       = "Event"
	APIVersion = "audit.k8s.io/v1"
)

// Level says how much of a request is recorded.
type Level string

const (
	// LevelMetadata records who called what, the decision and the outcome.
	LevelMetadata Level = "Metadata"
	// LevelRequest records the request body too, with secrets redacted.
	LevelRequest Level = "Request"
)

// ParseLevel accepts the levels pipeguard-agent supports.
func ParseLevel(s string) (Level, bool) {
	switch Level(s) {
	case LevelMetadata, LevelRequest:
		return Level(s), true
	}
	return "", false
}

// Stage is the point of a request's life a record was written at.
type Stage string

const (
	// StageRequestReceived is the write-ahead record of a mutating request,
	// on disk before the host operation runs.
	StageRequestReceived Stage = "RequestReceived"
	// StageResponseComplete is written when the response is known.
	StageResponseComplete Stage = "ResponseComplete"
)

// Annotation keys. Chain fields and decisions live in annotations so that
// tools that know only audit.k8s.io/v1 still parse every record.
const (
	AnnotationSeq        = "pipeguard.io/seq"
	AnnotationPrevHash   = "pipeguard.io/prev-hash"
	AnnotationRecord     = "pipeguard.io/record" // "request" or "checkpoint"
	AnnotationDecision   = "pipeguard.io/decision"
	AnnotationRule       = "pipeguard.io/rule"
	AnnotationReason     = "pipeguard.io/reason"
	AnnotationGRPCCode   = "pipeguard.io/grpc-code"
	AnnotationGroup      = "pipeguard.io/group"
	AnnotationToken      = "pipeguard.io/token"
	AnnotationAuditError = "pipeguard.io/audit-error"
	AnnotationTruncated  = "pipeguard.io/request-truncated"

	AnnotationCheckpoint   = "pipeguard.io/checkpoint" // start, stop, rotate, periodic, prune
	AnnotationPreviousFile = "pipeguard.io/previous-file"
	AnnotationTornBytes    = "pipeguard.io/torn-bytes"
	// A start checkpoint after a file that ended with complete lines that
	// are not valid records: which file, how many bytes, and why.
	AnnotationSkippedFile  = "pipeguard.io/skipped-file"
	AnnotationSkippedBytes = "pipeguard.io/skipped-bytes"
	AnnotationSkipped      = "pipeguard.io/skipped"
	AnnotationPrunedFile   = "pipeguard.io/pruned-file"
	AnnotationPrunedSeqs   = "pipeguard.io/pruned-seqs"      // "first-last"
	AnnotationPrunedHash   = "pipeguard.io/pruned-last-hash" // hash of the pruned file's last record
)

// Record kinds and decisions.
const (
	RecordRequest    = "request"
	RecordCheckpoint = "checkpoint"
	DecisionAllow    = "allow"
	DecisionDeny     = "deny"
)

// kube-apiserver's authorization annotations (k8s.io/apiserver's
// endpoints/filters), with its values, so that tools keyed on them (event
// outcome in Elastic's, Splunk's and Datadog's Kubernetes audit content,
// ka.auth.decision in Falco) read the agent's decisions as they read the
// API server's. Every request record carries them beside
// AnnotationDecision; checkpoints carry neither.
const (
	AnnotationAuthorizationDecision = "authorization.k8s.io/decision"
	AnnotationAuthorizationReason   = "authorization.k8s.io/reason"
	AuthorizationAllow              = "allow"
	AuthorizationForbid             = "forbid"
	// ReasonAllowed is the authorization reason of every allowed request:
	// the caller was identified, its paths confined and the agent policy
	// allowed it.
	ReasonAllowed = "pipeguard-agent: allowed by the agent policy"
	// reasonDenied starts the authorization reason of a denial, which
	// then names the rule.
	reasonDenied = "pipeguard-agent: denied by rule "
)

// SetDecision sets a request record's decision in ann: allowed, or denied
// by rule, as AnnotationDecision (allow or deny) and AnnotationRule, and
// as kube-apiserver's AnnotationAuthorizationDecision (allow or forbid)
// and AnnotationAuthorizationReason. The reason names the rule only, never
// a message, so no string a caller sends reaches it. An allowed record has
// no AnnotationRule.
func SetDecision(ann map[string]string, allowed bool, rule string) {
	if allowed {
		ann[AnnotationDecision] = DecisionAllow
		ann[AnnotationAuthorizationDecision] = AuthorizationAllow
		ann[AnnotationAuthorizationReason] = ReasonAllowed
		delete(ann, AnnotationRule)
		return
	}
	ann[AnnotationDecision] = DecisionDeny
	ann[AnnotationRule] = rule
	ann[AnnotationAuthorizationDecision] = AuthorizationForbid
	ann[AnnotationAuthorizationReason] = reasonDenied + rule
}

// Keys of User.Extra describing the caller.
const (
	ExtraPID            = "pipeguard.io/pid"
	ExtraProcessStart   = "pipeguard.io/process-start"
	ExtraUID            = "pipeguard.io/uid"
	ExtraGID            = "pipeguard.io/gid"
	ExtraSID            = "pipeguard.io/sid"
	ExtraContainerID    = "pipeguard.io/container-id"
	ExtraPodUID         = "pipeguard.io/pod-uid"
	ExtraPodName        = "pipeguard.io/pod-name"
	ExtraNamespace      = "pipeguard.io/namespace"
	ExtraServiceAccount = "pipeguard.io/service-account"
	ExtraSource         = "pipeguard.io/identity-source"
	ExtraNote           = "pipeguard.io/identity-note"
)

// Event is one audit record, as audit.k8s.io/v1 Event.
type Event struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    Level             `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    Stage             `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     UserInfo          `json:"user"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *ObjectReference  `json:"objectRef,omitempty"`
	ResponseStatus           *Status           `json:"responseStatus,omitempty"`
	RequestObject            map[string]any    `json:"requestObject,omitempty"`
	RequestReceivedTimestamp MicroTime         `json:"requestReceivedTimestamp"`
	StageTimestamp           MicroTime         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`

	// user, when set by SetUser and still describing User, is written in
	// place of encoding User.
	user *EncodedUser
}

// SetUser sets User to u's UserInfo, whose encoding u already holds: the
// record is written with those bytes rather than by encoding User again.
// Assigning User afterwards makes the record encode User as usual. A nil u
// sets the empty UserInfo.
func (e *Event) SetUser(u *EncodedUser) {
	if u == nil {
		e.User, e.user = UserInfo{}, nil
		return
	}
	e.User, e.user = u.info, u
}

// EncodedUser is a UserInfo with its JSON encoding, made once for a caller
// whose records are many (the user block of every request on one
// connection). Neither it nor the UserInfo it was made from may change
// once made.
type EncodedUser struct {
	info UserInfo
	json []byte
	cut  []string // the fields cut from json
}

// EncodeUser encodes u, exactly as encoding/json writes it.
func EncodeUser(u UserInfo) *EncodedUser {
	var cut cutList
	b := appendUser(nil, &u, &cut)
	return &EncodedUser{info: u, json: b, cut: slices.Clone(cut.names)}
}

// Info returns the UserInfo.
func (u *EncodedUser) Info() UserInfo { return u.info }

// describes reports whether u is what u was encoded from: the same
// username and UID, and the very same groups list and extra map, which
// are never changed once encoded.
func (u *EncodedUser) describes(v *UserInfo) bool {
	w := &u.info
	return v.Username == w.Username && v.UID == w.UID &&
		sameSlice(v.Groups, w.Groups) && sameMap(v.Extra, w.Extra)
}

// UserInfo is authentication.k8s.io/v1 UserInfo.
type UserInfo struct {
	Username string              `json:"username"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// ExtraValue returns the first value of an extra key, or "".
func (u UserInfo) ExtraValue(key string) string {
	if v := u.Extra[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// ObjectReference names what a request acted on: the API group as
// resource, its version, and the main path, volume or share as name.
type ObjectReference struct {
	Resource   string `json:"resource,omitempty"`
	Name       string `json:"name,omitempty"`
	APIGroup   string `json:"apiGroup,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// Status is the subset of meta/v1 Status that audit records carry.
type Status struct {
	Status  string `json:"status,omitempty"` // Success or Failure
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"` // the gRPC code name
	Code    int32  `json:"code,omitempty"`   // the HTTP equivalent of the gRPC code
}

// MicroTime marshals as RFC 3339 with microseconds in UTC, as meta/v1
// MicroTime does.
type MicroTime struct{ time.Time }

const microLayout = "2006-01-02T15:04:05.000000Z07:00"

// MarshalJSON implements json.Marshaler.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	return t.appendJSON(make([]byte, 0, len(microLayout)+2)), nil
}

func (t MicroTime) appendJSON(b []byte) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	u := t.UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		b = u.AppendFormat(b, microLayout)
		return append(b, '"')
	}
	hour, minute, sec := u.Clock()
	// 2006-01-02T15:04:05.000000Z, as microLayout writes a UTC time.
	b = append(b, '"')
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, u.Nanosecond()/1000, 6)
	return append(b, 'Z', '"')
}

// appendDigits writes n, which is not negative, zero-padded to width digits.
func appendDigits(b []byte, n, width int) []byte {
	var d [8]byte
	for i := width - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[:width]...)
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return err
	}
	t.Time, err = time.Parse(time.RFC3339Nano, s)
	return err
}

// Annotation returns an annotation or "".
func (e *Event) Annotation(key string) string { return e.Annotations[key] }

// IsCheckpoint reports whether the record is a checkpoint, not a request.
func (e *Event) IsCheckpoint() bool { return e.Annotations[AnnotationRecord] == RecordCheckpoint }

// Method is the gRPC method name without its service, e.g. "Mkdir".
func (e *Event) Method() string { return e.Verb }
