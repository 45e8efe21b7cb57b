package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// StubCRD is the YAML of a namespaced CustomResourceDefinition of
// plural.group, kind kind, that accepts any object: a stand-in for another
// project's CRD (the Prometheus Operator's, cert-manager's) where only its
// presence matters.
func StubCRD(group, plural, kind string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: %[2]s, singular: %[4]s, kind: %[3]s, listKind: %[3]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, group, plural, kind, strings.ToLower(kind))
}

// ReadCRDs reads the CustomResourceDefinitions of the YAML files in dir,
// one per file, strictly, and fails t unless there are want of them.
func ReadCRDs(t testing.TB, dir string, want int) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) != want {
		t.Fatalf("want %d CRDs in %s, found %v (%v)", want, dir, files, err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, crd)
	}
	return out
}
