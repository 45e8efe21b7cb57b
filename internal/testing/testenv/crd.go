package testenv

import (
	"fmt"
	"strings"
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
