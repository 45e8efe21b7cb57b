package rego

import (
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// deniedBuiltins are left out of the capabilities admin rego may use: a
// decision must not wait on the network or depend on the process it runs in.
var deniedBuiltins = map[string]bool{
	"http.send":          true,
	"net.lookup_ip_addr": true,
	"opa.runtime":        true,
	"rego.parse_module":  true,
}

// Capabilities are the rego builtins admin-written rules may use, in the
// webhook and in the agent: all of this OPA version's, less those that reach
// the network or the process.
func Capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	kept := caps.Builtins[:0:0]
	for _, b := range caps.Builtins {
		if !deniedBuiltins[b.Name] {
			kept = append(kept, b)
		}
	}
	caps.Builtins = kept
	return caps
}

// CheckAdminPackage returns an error unless the package of module m, read
// from file, lies strictly below root: admin-written rules may add packages
// there but never replace the shipped rules of root itself. example names a
// package below root to suggest.
func CheckAdminPackage(file string, m *ast.Module, root ast.Ref, example string) error {
	path := m.Package.Path
	if path.HasPrefix(root) && len(path) > len(root) {
		return nil
	}
	below := strings.TrimPrefix(root.String(), "data.")
	return fmt.Errorf("%s:%d: package %s is not allowed; declare a package below %s, e.g. \"package %s.%s\"",
		file, m.Package.Location.Row, strings.TrimPrefix(path.String(), "data."), below, below, example)
}
