package guard

import (
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/methods"
)

// objectName is the first of the method's fields, in the table's order of
// preference, that names what the call acts on.
func objectName(m *methods.Method, req *request) string {
	for _, f := range m.Fields {
		if v, ok := req.str(f.Name); ok {
			if v != "" {
				return v
			}
			continue
		}
		switch v := req.field(f.Name).(type) {
		case string:
			if v != "" {
				return v
			}
		case uint64, int64:
			return strings.TrimSpace(strconv.FormatUint(toUint(v), 10))
		}
	}
	return ""
}

func toUint(v any) uint64 {
	switch n := v.(type) {
	case uint64:
		return n
	case int64:
		return uint64(n)
	}
	return 0
}

// userInfo is the record's user for a caller with key k and notes: the
// username and the extra values describing the caller.
func userInfo(k userKey, notes []string) audit.UserInfo {
	// Sized for the values present: a map of up to 8 entries is one group.
	n := len(notes)
	for _, v := range []string{k.processStart, k.sid, k.containerID, k.podUID, k.podName, k.namespace, k.serviceAccount, k.source} {
		if v != "" {
			n++
		}
	}
	if k.pid > 0 {
		n++
	}
	if k.uid >= 0 {
		n++
	}
	if k.gid >= 0 {
		n++
	}
	extra := make(map[string][]string, n)
	// One backing array for the single-value lists.
	values := make([]string, 0, n)
	set := func(key, v string) {
		if v != "" {
			values = append(values, v)
			extra[key] = values[len(values)-1 : len(values) : len(values)]
		}
	}
	if k.pid > 0 {
		set(audit.ExtraPID, strconv.Itoa(k.pid))
	}
	set(audit.ExtraProcessStart, k.processStart)
	if k.uid >= 0 {
		set(audit.ExtraUID, strconv.FormatInt(k.uid, 10))
	}
	if k.gid >= 0 {
		set(audit.ExtraGID, strconv.FormatInt(k.gid, 10))
	}
	set(audit.ExtraSID, k.sid)
	set(audit.ExtraContainerID, k.containerID)
	set(audit.ExtraPodUID, k.podUID)
	set(audit.ExtraPodName, k.podName)
	set(audit.ExtraNamespace, k.namespace)
	set(audit.ExtraServiceAccount, k.serviceAccount)
	if k.sidSource != "" {
		// Which token the SID was read from: the pipe client's
		// impersonation token, or its process token.
		set(audit.ExtraSource, k.source+"; sid: "+k.sidSource)
	} else {
		set(audit.ExtraSource, k.source)
	}
	if len(notes) > 0 {
		extra[audit.ExtraNote] = append([]string(nil), notes...)
	}
	username := (&identity.Caller{TokenUser: k.tokenUser, SID: k.sid, UID: k.uid}).Username()
	return audit.UserInfo{Username: username, Extra: extra}
}

// httpCode is the HTTP status closest to a gRPC code, for tools that read
// responseStatus.code as kube-apiserver writes it.
func httpCode(c codes.Code) int32 {
	switch c {
	case codes.OK:
		return 200
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return 400
	case codes.Unauthenticated:
		return 401
	case codes.PermissionDenied:
		return 403
	case codes.NotFound:
		return 404
	case codes.AlreadyExists, codes.Aborted:
		return 409
	case codes.ResourceExhausted:
		return 429
	case codes.Canceled:
		return 499
	case codes.Unimplemented:
		return 501
	case codes.Unavailable:
		return 503
	case codes.DeadlineExceeded:
		return 504
	}
	return 500
}

func responseStatus(err error) (audit.Status, codes.Code) {
	s := status.Convert(err)
	st := audit.Status{Status: "Success", Reason: s.Code().String(), Code: httpCode(s.Code())}
	if err != nil {
		st.Status, st.Message = "Failure", s.Message()
	}
	return st, s.Code()
}

func stamp(t time.Time) audit.MicroTime { return audit.MicroTime{Time: t} }
