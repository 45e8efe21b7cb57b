package compare

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/methods"
)

// apiMethod is one method of one CSI Proxy API group version.
type apiMethod struct{ group, version, name string }

// apiMethods returns every method of every CSI Proxy API group version the
// client library declares.
func apiMethods(t *testing.T) []apiMethod {
	var out []apiMethod
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(f.Path(), "github.com/kubernetes-csi/csi-proxy/client/api/") && !strings.Contains(f.Path(), "csi-proxy") {
			return true
		}
		for i := 0; i < f.Services().Len(); i++ {
			s := f.Services().Get(i)
			for j := 0; j < s.Methods().Len(); j++ {
				out = append(out, apiMethod{strings.ToLower(string(s.Name())), string(f.Package()), string(s.Methods().Get(j).Name())})
			}
		}
		return true
	})
	if len(out) < 100 {
		t.Fatalf("only %d CSI Proxy API methods found: %v", len(out), out)
	}
	return out
}

// TestAllowedOnlyReads holds Allowed against the method table of package
// methods and every method CSI Proxy's API declares: each allowed method
// is in the table, is served by the version compare reads, and is not
// mutating by the gate's rule; no mutating method of any group or version
// is allowed.
func TestAllowedOnlyReads(t *testing.T) {
	all := apiMethods(t)
	served := map[apiMethod]bool{}
	for _, m := range all {
		if _, ok := methods.Lookup(m.group, m.name); !ok {
			t.Errorf("%s %s %s is not in the method table", m.group, m.version, m.name)
		}
		served[m] = true
		if gate.Mutating(m.name) && slices.Contains(Allowed[m.group], m.name) {
			t.Errorf("%s %s is mutating and allowed", m.group, m.name)
		}
	}
	for group, names := range Allowed {
		for _, name := range names {
			if _, ok := methods.Lookup(group, name); !ok {
				t.Errorf("allowed %s %s is not in the method table", group, name)
			}
			if gate.Mutating(name) {
				t.Errorf("allowed %s %s is mutating", group, name)
			}
			if !served[apiMethod{group, Versions[group], name}] {
				t.Errorf("allowed %s %s is not a method of %s %s", group, name, group, Versions[group])
			}
		}
	}
	for group := range Unread {
		if len(Allowed[group]) != 0 {
			t.Errorf("%s is both unread and allowed", group)
		}
	}
}

// TestReadersDeclareOnlyAllowed: the interfaces compare reaches each side
// through declare exactly the allowed methods, so no other can be called.
func TestReadersDeclareOnlyAllowed(t *testing.T) {
	for group, typ := range map[string]reflect.Type{
		"disk":       reflect.TypeFor[DiskReader](),
		"volume":     reflect.TypeFor[VolumeReader](),
		"system":     reflect.TypeFor[SystemReader](),
		"filesystem": reflect.TypeFor[FilesystemReader](),
	} {
		var got []string
		for i := 0; i < typ.NumMethod(); i++ {
			got = append(got, typ.Method(i).Name)
		}
		want := slices.Sorted(slices.Values(Allowed[group]))
		if !slices.Equal(got, want) {
			t.Errorf("%s: %s declares %v, want %v", group, typ, got, want)
		}
	}
	if n := reflect.TypeFor[Conns]().NumField(); n != 5 {
		t.Errorf("Conns has %d fields: a new one must be a reader of allowed methods", n)
	}
}

// TestLocalRefusesTheRest: pipeguard's in-memory server refuses every
// method but the allowed ones, of every version, before its handler.
func TestLocalRefusesTheRest(t *testing.T) {
	for _, m := range apiMethods(t) {
		full := "/" + m.version + "." + strings.ToUpper(m.group[:1]) + m.group[1:] + "/" + m.name
		called := false
		_, err := allowedOnly(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: full}, func(context.Context, any) (any, error) {
			called = true
			return nil, nil
		})
		allowed := Versions[m.group] == m.version && slices.Contains(Allowed[m.group], m.name)
		if allowed != called {
			t.Errorf("%s: handler called %v, want %v", full, called, allowed)
		}
		if !allowed && status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s: %v, want PermissionDenied", full, err)
		}
	}
	for _, full := range []string{"", "/", "/v1.Disk", "v1.Disk/ListDiskLocations/", "/v1.Disk/ListDiskLocations/x", "/v1.disk/PartitionDisk"} {
		if allowedMethod(full) {
			t.Errorf("%q allowed", full)
		}
	}
}

// TestNoMutatingCallInSource: no code of the command, in this package or
// in cmd/pipeguard-agent/app/compare.go, names a method of the CSI Proxy API
// that is not allowed, so none can be called by way of another type.
func TestNoMutatingCallInSource(t *testing.T) {
	forbidden := map[string]bool{}
	for _, m := range apiMethods(t) {
		if !slices.Contains(Allowed[m.group], m.name) {
			forbidden[m.name] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../cmd/pipeguard-agent/app/compare.go")
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && forbidden[sel.Sel.Name] {
				t.Errorf("%s: names %s, which compare may not call", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 8 {
		t.Errorf("only %d files checked", checked)
	}
}
