package guard

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/methods"
	_ "github.com/pipeguard/pipeguard/internal/testing/csiapis"
)

// TestRequestFieldMatchesRedact reads every field of every CSI Proxy request
// message of every API version, unset and set, one at a time and after the
// request was rendered: each value is the one gate.Redact renders, secrets
// redacted included, so that confinement and the record's object name see
// what they saw when every request was rendered.
func TestRequestFieldMatchesRedact(t *testing.T) {
	n := 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		name := string(mt.Descriptor().FullName())
		if !strings.HasSuffix(name, "Request") {
			return true
		}
		n++
		for _, set := range []bool{false, true} {
			msg := mt.New()
			if set {
				fill(msg)
			}
			want := gate.Redact(msg.Interface())
			fields := msg.Descriptor().Fields()
			for i := range fields.Len() {
				f := string(fields.Get(i).Name())
				r := newRequest(msg.Interface())
				got := r.field(f)
				if !reflect.DeepEqual(got, want[f]) {
					t.Errorf("%s (set %v) field %s: %#v, want %#v as rendered", name, set, f, got, want[f])
				}
				wantStr, wantOK := want[f].(string)
				if s, ok := newRequestPtr(msg.Interface()).str(f); s != wantStr || ok != wantOK {
					t.Errorf("%s (set %v) field %s as a string: %q, %v; want %q, %v as rendered", name, set, f, s, ok, wantStr, wantOK)
				}
				r.render()
				if s, ok := r.str(f); s != wantStr || ok != wantOK {
					t.Errorf("%s (set %v) field %s as a string after rendering: %q, %v; want %q, %v", name, set, f, s, ok, wantStr, wantOK)
				}
				if got := r.field(f); !reflect.DeepEqual(got, want[f]) {
					t.Errorf("%s (set %v) field %s after rendering: %#v, want %#v", name, set, f, got, want[f])
				}
			}
			if r := newRequest(msg.Interface()); r.field("no_such_field") != nil {
				got := r.field("no_such_field")
				t.Errorf("%s: a field it does not have reads %#v", name, got)
			}
		}
		return true
	})
	if n < 50 {
		t.Fatalf("only %d request messages registered; the API packages are not linked in", n)
	}
	if r := newRequest("not a message"); r.field("path") != nil {
		got := r.field("path")
		t.Fatalf("a request that is no message reads %#v", got)
	}
}

// TestPathFieldsReadWithoutRendering checks that the fields the guard reads
// on every request, the path fields of every method in the table, are read
// without rendering the request, on the methods of filesystem v1.
func TestPathFieldsReadWithoutRendering(t *testing.T) {
	r := newRequest(&fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods"})
	m := methods.Of("filesystem", "PathExists")
	for _, f := range m.Paths() {
		if got := r.field(f.Name); got != "/var/lib/kubelet/pods" {
			t.Fatalf("field %s: %#v", f.Name, got)
		}
	}
	if got := objectName(m, &r); got != "/var/lib/kubelet/pods" {
		t.Fatalf("object name %q", got)
	}
	if r.rendered {
		t.Fatal("reading path fields rendered the whole request")
	}
}

func newRequestPtr(msg any) *request {
	r := newRequest(msg)
	return &r
}

// fill sets every field of m that can be set to a value that is not its
// default, recursively for messages.
func fill(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			if fd.Kind() == protoreflect.MessageKind {
				e := l.NewElement()
				fill(e.Message())
				l.Append(e)
			} else {
				l.Append(value(fd))
			}
		case fd.IsMap():
			mm := m.Mutable(fd).Map()
			k := protoreflect.ValueOfString("k").MapKey()
			if fd.MapKey().Kind() != protoreflect.StringKind {
				k = protoreflect.ValueOf(value(fd.MapKey()).Interface()).MapKey()
			}
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v := mm.NewValue()
				fill(v.Message())
				mm.Set(k, v)
			} else {
				mm.Set(k, value(fd.MapValue()))
			}
		case fd.Kind() == protoreflect.MessageKind:
			fill(m.Mutable(fd).Message())
		default:
			m.Set(fd, value(fd))
		}
	}
}

// value is a value of fd's kind that is not its default.
func value(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("C:\\v-%s", fd.Name()))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(-7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(1 << 40)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(1.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(2.5)
	case protoreflect.EnumKind:
		if vals := fd.Enum().Values(); vals.Len() > 1 {
			return protoreflect.ValueOfEnum(vals.Get(1).Number())
		}
		return protoreflect.ValueOfEnum(5)
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("raw"))
	}
	return fd.Default()
}
