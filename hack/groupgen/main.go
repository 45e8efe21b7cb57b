// Command groupgen writes the gRPC adapters of the agent's CSI Proxy API
// groups: for every version of a group, a type that implements the version's
// service by calling the group's internal server.
//
// It reads the services, RPCs and messages from the descriptors that the
// csi-proxy client packages register, and the internal calls from its table
// (table.go). It writes <out>/<group>/zz_generated.versions.go for each group.
//
//	go run ./hack/groupgen -out agent/groups
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	// Every served API version; each registers its descriptors.
	_ "github.com/pipeguard/pipeguard/internal/testing/csiapis"
)

// fileName is the name of the generated file in each group's directory.
const fileName = "zz_generated.versions.go"

func main() {
	out := flag.String("out", ".", "directory holding one directory per group")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "groupgen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	for _, g := range groups {
		src, err := generate(g)
		if err != nil {
			return fmt.Errorf("%s: %w", g.name, err)
		}
		dir := filepath.Join(out, g.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fileName), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}
