package gate

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/methods"
)

// InputVersion is the version of the input document.
const InputVersion = "pipeguard.io/agent/v1"

// Redacted replaces the value of every secret field.
const Redacted = "[redacted]"

// Input is what the rules decide on.
type Input struct {
	Group, Version, Method, FullMethod string
	Mutating                           bool
	Caller                             *identity.Caller
	// Request is the request as plain values, secrets redacted (Redact).
	Request map[string]any
}

// Keys of the input document, allocated once.
var (
	inputVersion = ast.StringTerm(InputVersion)
	key          = struct {
		apiVersion, group, groupVersion, method, fullMethod, mutating, caller, request *ast.Term
		username, source, pid, processStart, uid, gid, sid, containerID, runtime       *ast.Term
		podUID, podName, namespace, serviceAccount, attribution                        *ast.Term
	}{
		ast.StringTerm("apiVersion"), ast.StringTerm("group"), ast.StringTerm("groupVersion"), ast.StringTerm("method"),
		ast.StringTerm("fullMethod"), ast.StringTerm("mutating"), ast.StringTerm("caller"), ast.StringTerm("request"),
		ast.StringTerm("username"), ast.StringTerm("source"), ast.StringTerm("pid"), ast.StringTerm("processStart"),
		ast.StringTerm("uid"), ast.StringTerm("gid"), ast.StringTerm("sid"), ast.StringTerm("containerID"), ast.StringTerm("runtime"),
		ast.StringTerm("podUID"), ast.StringTerm("podName"), ast.StringTerm("namespace"), ast.StringTerm("serviceAccount"),
		ast.StringTerm("attribution"),
	}
)

// value builds the rego input directly as an ast.Value.
func (in *Input) value() ast.Value {
	c := in.Caller
	if c == nil {
		c = &identity.Caller{UID: -1, GID: -1}
	}
	caller := ast.NewObject(
		[2]*ast.Term{key.username, ast.StringTerm(c.Username())},
		[2]*ast.Term{key.source, ast.StringTerm(c.Source)},
		[2]*ast.Term{key.pid, ast.IntNumberTerm(c.PID)},
		[2]*ast.Term{key.processStart, ast.StringTerm(c.ProcessStart)},
		[2]*ast.Term{key.uid, ast.IntNumberTerm(int(c.UID))},
		[2]*ast.Term{key.gid, ast.IntNumberTerm(int(c.GID))},
		[2]*ast.Term{key.sid, ast.StringTerm(c.SID)},
		[2]*ast.Term{key.containerID, ast.StringTerm(c.ContainerID)},
		[2]*ast.Term{key.runtime, ast.StringTerm(c.Runtime)},
		[2]*ast.Term{key.podUID, ast.StringTerm(c.PodUID)},
		[2]*ast.Term{key.podName, ast.StringTerm(c.PodName)},
		[2]*ast.Term{key.namespace, ast.StringTerm(c.Namespace)},
		[2]*ast.Term{key.serviceAccount, ast.StringTerm(c.ServiceAccount)},
		// "pod", "host" or "unattributed": an empty podUID alone does not
		// say the caller is on the host.
		[2]*ast.Term{key.attribution, ast.StringTerm(c.Attribution())},
	)
	req, err := ast.InterfaceToValue(in.Request)
	if err != nil || in.Request == nil {
		req = ast.NewObject()
	}
	return ast.NewObject(
		[2]*ast.Term{key.apiVersion, inputVersion},
		[2]*ast.Term{key.group, ast.StringTerm(in.Group)},
		[2]*ast.Term{key.groupVersion, ast.StringTerm(in.Version)},
		[2]*ast.Term{key.method, ast.StringTerm(in.Method)},
		[2]*ast.Term{key.fullMethod, ast.StringTerm(in.FullMethod)},
		[2]*ast.Term{key.mutating, ast.BooleanTerm(in.Mutating)},
		[2]*ast.Term{key.caller, ast.NewTerm(caller)},
		[2]*ast.Term{key.request, ast.NewTerm(req)},
	)
}

// Document returns the input as plain values, as the rules see it, for
// documentation and `-o input` style output.
func (in *Input) Document() (any, error) { return ast.JSON(in.value()) }

// Mutating reports whether a CSI Proxy method changes the host. Reads are
// named Get…, List…, Is… and PathExists under their newest names (older
// versions call GetVolumeStats VolumeStats, for one); everything else,
// including methods added later, counts as mutating, so that it is audited
// durably.
func Mutating(method string) bool {
	method = methods.Newest(method)
	for _, p := range []string{"Get", "List", "Is"} {
		if strings.HasPrefix(method, p) && len(method) > len(p) && method[len(p)] >= 'A' && method[len(p)] <= 'Z' {
			return false
		}
	}
	return method != "PathExists"
}

// SecretField reports whether a request field holds a secret, by its
// name: SMB passwords and iSCSI CHAP secrets, in every API version's
// spelling. Redact renders such a field as Redacted.
func SecretField(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "password") || strings.Contains(n, "secret")
}

// Redact returns a request message as plain values keyed by proto field
// name, with every secret field replaced by Redacted. Non-messages give nil.
func Redact(msg any) map[string]any {
	var m protoreflect.ProtoMessage
	switch x := msg.(type) {
	case protoreflect.ProtoMessage:
		m = x
	case protoadapt.MessageV1:
		m = protoadapt.MessageV2Of(x)
	default:
		return nil
	}
	return message(m.ProtoReflect())
}

func message(m protoreflect.Message) map[string]any {
	out := map[string]any{}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		name := string(fd.Name())
		if !m.Has(fd) && fd.Kind() != protoreflect.MessageKind {
			out[name] = zero(fd)
			continue
		}
		if SecretField(name) {
			if m.Has(fd) {
				out[name] = Redacted
			} else {
				out[name] = ""
			}
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			items := make([]any, l.Len())
			for j := range l.Len() {
				items[j] = scalar(fd, l.Get(j))
			}
			out[name] = items
		case fd.IsMap():
			mm := map[string]any{}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				mm[k.String()] = scalar(fd.MapValue(), mv)
				return true
			})
			out[name] = mm
		default:
			if fd.Kind() == protoreflect.MessageKind && !m.Has(fd) {
				out[name] = nil
				continue
			}
			out[name] = scalar(fd, v)
		}
	}
	return out
}

func scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return message(v.Message())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return int64(v.Enum())
	case protoreflect.BytesKind:
		return Redacted // no CSI Proxy request carries bytes; never log raw ones
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint()
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float()
	}
	return v.Interface()
}

func zero(fd protoreflect.FieldDescriptor) any {
	if fd.IsList() {
		return []any{}
	}
	if fd.IsMap() {
		return map[string]any{}
	}
	return scalar(fd, fd.Default())
}
