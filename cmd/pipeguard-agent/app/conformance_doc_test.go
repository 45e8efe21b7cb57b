package app

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/pipeguard/pipeguard/internal/testing/csiapis"
	"github.com/pipeguard/pipeguard/internal/testing/doctable"
)

// The CSI Proxy API groups, and the form of their versions' proto packages.
var (
	apiGroups  = map[string]bool{"disk": true, "filesystem": true, "volume": true, "smb": true, "iscsi": true, "system": true}
	apiVersion = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)
)

// servedRPCs returns, by "group RPC", the API versions that have the RPC,
// from the service descriptors of every version the agent serves.
func servedRPCs() map[string][]string {
	rpcs := map[string][]string{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !apiVersion.MatchString(string(fd.Package())) {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			s := fd.Services().Get(i)
			group := strings.ToLower(string(s.Name()))
			if !apiGroups[group] {
				continue
			}
			for j := 0; j < s.Methods().Len(); j++ {
				k := group + " " + string(s.Methods().Get(j).Name())
				rpcs[k] = append(rpcs[k], string(fd.Package()))
			}
		}
		return true
	})
	return rpcs
}

// testFuncs returns the names of the test functions of the repository.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	names := map[string]bool{}
	err := filepath.WalkDir(filepath.Join("..", "..", ".."), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != filepath.Join("..", "..", "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestConformanceTableNamesEveryRPC checks docs/windows.md's table of
// conformance with CSI Proxy 1.3: one row per RPC of every served group,
// with the versions that have it, and in its last cell the tests that hold
// the row, each of which exists (a TestConformance subtest among
// conformanceCases).
func TestConformanceTableNamesEveryRPC(t *testing.T) {
	rows := doctable.Rows(t, filepath.Join("..", "..", "..", "docs", "windows.md"), "Conformance with CSI Proxy 1.3", 6)
	want := servedRPCs()
	tests := testFuncs(t)
	cases := conformanceCases()
	named := regexp.MustCompile("`(Test[\\w/]+)`")
	seen := map[string]bool{}
	for _, row := range rows {
		group, rpc, versions, held := row[0], strings.Trim(row[1], "`"), row[2], row[5]
		key := group + " " + rpc
		if seen[key] {
			t.Errorf("%s %s has two rows", group, rpc)
		}
		seen[key] = true
		served, ok := want[key]
		if !ok {
			t.Errorf("row %s %s: no served version has that RPC", group, rpc)
			continue
		}
		slices.Sort(served)
		got := strings.Split(strings.ReplaceAll(versions, " ", ""), ",")
		slices.Sort(got)
		if !slices.Equal(got, served) {
			t.Errorf("row %s %s: versions %q, want %q", group, rpc, versions, strings.Join(served, ", "))
		}
		refs := named.FindAllStringSubmatch(held, -1)
		if len(refs) == 0 {
			t.Errorf("row %s %s names no test that holds it", group, rpc)
		}
		for _, ref := range refs {
			fn, sub, _ := strings.Cut(ref[1], "/")
			switch {
			case !tests[fn]:
				t.Errorf("row %s %s: no test function %s", group, rpc, fn)
			case fn == "TestConformance" && cases[sub] == nil:
				t.Errorf("row %s %s: TestConformance has no case %q", group, rpc, sub)
			}
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("the table has no row for %s (versions %s)", key, strings.Join(want[key], ", "))
		}
	}
	for name := range cases {
		if !seen[strings.Replace(name, "/", " ", 1)] {
			t.Errorf("TestConformance case %q is no row of the table", name)
		}
	}
}
