package guard

import (
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pipeguard/pipeguard/agent/gate"
)

// request is a call's request message. The guard reads a few of its fields
// (the paths it confines, the name the record gives the object); the whole
// message is rendered as plain values (gate.Redact) only when something
// needs all of it: the gate's input, when the policies in force can deny,
// and the record's body at Request level.
type request struct {
	msg      any
	m        protoreflect.Message // nil when msg is not a protobuf message
	all      map[string]any
	rendered bool
}

func newRequest(msg any) request {
	r := request{msg: msg}
	switch x := msg.(type) {
	case protoreflect.ProtoMessage:
		r.m = x.ProtoReflect()
	case protoadapt.MessageV1:
		r.m = protoadapt.MessageV2Of(x).ProtoReflect()
	}
	return r
}

// render returns the request as gate.Redact renders it, rendering it once.
func (r *request) render() map[string]any {
	if !r.rendered {
		r.all, r.rendered = gate.Redact(r.msg), true
	}
	return r.all
}

// field returns what render()[name] holds, reading the one field when it is
// a plain scalar and rendering the whole request otherwise.
func (r *request) field(name string) any {
	if r.rendered || r.m == nil {
		return r.render()[name]
	}
	fd := r.m.Descriptor().Fields().ByName(protoreflect.Name(name))
	if fd == nil {
		return nil
	}
	if v, ok := plainScalar(r.m, fd); ok {
		return v
	}
	return r.render()[name]
}

// str is field for a field read as a string: the value and true when
// render()[name] holds a string.
func (r *request) str(name string) (string, bool) {
	if !r.rendered && r.m != nil {
		if fd := r.m.Descriptor().Fields().ByName(protoreflect.Name(name)); fd != nil && fd.Kind() == protoreflect.StringKind && plain(fd) {
			return r.m.Get(fd).String(), true
		}
	}
	s, ok := r.field(name).(string)
	return s, ok
}

// plain reports whether a field is a singular one that gate.Redact renders
// as its value: not a list or a map, and not named as a secret.
func plain(fd protoreflect.FieldDescriptor) bool {
	return !fd.IsList() && !fd.IsMap() && !gate.SecretField(string(fd.Name()))
}

// plainScalar reads a singular string, bool or integer field that cannot
// hold a secret, as gate.Redact renders it (an unset field reads as its
// default, as Redact renders it too). ok is false for every other field:
// lists, maps, messages, enums, bytes, floats, and every field whose name
// says it may hold a secret, which only Redact renders.
func plainScalar(m protoreflect.Message, fd protoreflect.FieldDescriptor) (v any, ok bool) {
	if !plain(fd) {
		return nil, false
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return m.Get(fd).String(), true
	case protoreflect.BoolKind:
		return m.Get(fd).Bool(), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return m.Get(fd).Int(), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return m.Get(fd).Uint(), true
	}
	return nil, false
}
