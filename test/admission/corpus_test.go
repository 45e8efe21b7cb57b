package admission_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// goCorpora are the packages whose tests (and sample objects) hold the
// paths pipeguard is tested with: every string literal in their Go files
// is taken as a path.
var goCorpora = []string{
	"../../pipepath",
	"../../webhook",
	"../../webhook/decode",
	"../../internal/testing/samplepods",
	"../../cmd/pipeguard-webhook/app",
	"../../cmd/pipeguard",
	"../../test/install",
}

// manifestCorpora hold the example and test manifests; every object of a
// reviewed kind in them is evaluated whole, and every path, subPath and
// subPathExpr in them joins the path corpus.
var manifestCorpora = []string{
	"../../docs/examples",
	"../../test/install/testdata",
	"../../config/samples",
}

// realManifests holds manifests of real CSI drivers, kept outside the
// repository; the tests use it when it is there.
const realManifests = "../../../shared/real-manifests"

// corpusObject is an object of a reviewed kind read from a manifest.
type corpusObject struct {
	file string
	kind kind
	obj  runtime.Object
	spec *corev1.PodSpec // nil for a PersistentVolume
}

type corpus struct {
	paths   []string // deduplicated, in a stable order
	objects []corpusObject
	real    int // objects read from realManifests
}

var loaded *corpus

func loadCorpus(t testing.TB) *corpus {
	t.Helper()
	mustKinds(t)
	if loaded != nil {
		return loaded
	}
	c := &corpus{}
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] && len(s) <= 4096 {
			seen[s] = true
			c.paths = append(c.paths, s)
		}
	}
	for _, s := range spellings {
		add(s)
	}
	for _, dir := range goCorpora {
		for _, s := range goLiterals(t, dir) {
			add(s)
		}
	}
	dirs := slices.Clone(manifestCorpora)
	if _, err := os.Stat(realManifests); err == nil {
		dirs = append(dirs, realManifests)
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(file string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch filepath.Ext(file) {
			case ".yaml", ".yml", ".json":
			default:
				return nil
			}
			b, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			n := len(c.objects)
			c.readManifest(t, file, b, add)
			if dir == realManifests {
				c.real += len(c.objects) - n
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(realManifests); err == nil && c.real == 0 {
		t.Fatalf("%s is there but holds no object of a reviewed kind", realManifests)
	}
	loaded = c
	return c
}

// goLiterals returns every string literal in the Go files of dir.
func goLiterals(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out = append(out, s)
				}
			}
			return true
		})
	}
	return out
}

// readManifest reads the documents of one manifest file.
func (c *corpus) readManifest(t testing.TB, file string, b []byte, add func(string)) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var doc any
		err := dec.Decode(&doc)
		if err == io.EOF {
			return
		}
		if err != nil {
			// Templates and kustomize patches need not be valid YAML
			// documents on their own; the paths already read count.
			t.Logf("%s: %v", file, err)
			return
		}
		c.walk(t, file, doc, add)
	}
}

// walk collects paths and reviewed objects anywhere in v, so that objects
// inside lists, AdmissionReviews and test suites count too.
func (c *corpus) walk(t testing.TB, file string, v any, add func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "path" || k == "subPath" || k == "subPathExpr") {
				add(s)
			}
			c.walk(t, file, x, add)
		}
		if o, ok := decodeObject(t, file, v); ok {
			o.file = file
			c.objects = append(c.objects, o)
		}
	case []any:
		for _, x := range v {
			c.walk(t, file, x, add)
		}
	}
}

// decodeObject reads m as an object of a reviewed kind, in the version
// the table of kinds names.
func decodeObject(t testing.TB, file string, m map[string]any) (corpusObject, bool) {
	kindName, _ := m["kind"].(string)
	apiVersion, _ := m["apiVersion"].(string)
	var k *kind
	for i := range podKinds {
		if podKinds[i].gvk.Kind == kindName && podKinds[i].gvk.GroupVersion().String() == apiVersion {
			k = &podKinds[i]
		}
	}
	if pvKind.gvk.Kind == kindName && pvKind.gvk.GroupVersion().String() == apiVersion {
		k = &pvKind
	}
	if k == nil {
		return corpusObject{}, false
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	obj := k.table.New()
	if err := json.Unmarshal(b, obj); err != nil {
		t.Logf("%s: %s %v: %v", file, kindName, m["metadata"], err)
		return corpusObject{}, false
	}
	o := corpusObject{kind: *k, obj: obj}
	if k.wrap != nil {
		if o.spec, err = podSpecOf(*k, obj); err != nil {
			t.Fatalf("%s: %s %v: %v", file, kindName, m["metadata"], err)
		}
	}
	return o, true
}
