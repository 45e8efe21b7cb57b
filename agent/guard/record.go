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
func objectName(m *methods.Method, req map[string]any) string {
	for _, f := range m.Fields {
		switch v := req[f.Name].(type) {
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

func userInfo(c *identity.Caller) audit.UserInfo {
	// Sized for the values present: a map of up to 8 entries is one group.
	n := len(c.Notes)
	for _, v := range []string{c.ProcessStart, c.SID, c.ContainerID, c.PodUID, c.PodName, c.Namespace, c.ServiceAccount, c.Source} {
		if v != "" {
			n++
		}
	}
	if c.PID > 0 {
		n++
	}
	if c.UID >= 0 {
		n++
	}
	if c.GID >= 0 {
		n++
	}
	extra := make(map[string][]string, n)
	// One backing array for the single-value lists.
	values := make([]string, 0, n)
	set := func(k, v string) {
		if v != "" {
			values = append(values, v)
			extra[k] = values[len(values)-1 : len(values) : len(values)]
		}
	}
	if c.PID > 0 {
		set(audit.ExtraPID, strconv.Itoa(c.PID))
	}
	set(audit.ExtraProcessStart, c.ProcessStart)
	if c.UID >= 0 {
		set(audit.ExtraUID, strconv.FormatInt(c.UID, 10))
	}
	if c.GID >= 0 {
		set(audit.ExtraGID, strconv.FormatInt(c.GID, 10))
	}
	set(audit.ExtraSID, c.SID)
	set(audit.ExtraContainerID, c.ContainerID)
	set(audit.ExtraPodUID, c.PodUID)
	set(audit.ExtraPodName, c.PodName)
	set(audit.ExtraNamespace, c.Namespace)
	set(audit.ExtraServiceAccount, c.ServiceAccount)
	if c.SIDSource != "" {
		// Which token the SID was read from: the pipe client's
		// impersonation token, or its process token.
		set(audit.ExtraSource, c.Source+"; sid: "+c.SIDSource)
	} else {
		set(audit.ExtraSource, c.Source)
	}
	if len(c.Notes) > 0 {
		extra[audit.ExtraNote] = append([]string(nil), c.Notes...)
	}
	return audit.UserInfo{Username: c.Username(), Extra: extra}
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

func responseStatus(err error) (*audit.Status, codes.Code) {
	s := status.Convert(err)
	st := &audit.Status{Status: "Success", Reason: s.Code().String(), Code: httpCode(s.Code())}
	if err != nil {
		st.Status, st.Message = "Failure", s.Message()
	}
	return st, s.Code()
}

func stamp(t time.Time) audit.MicroTime { return audit.MicroTime{Time: t} }
