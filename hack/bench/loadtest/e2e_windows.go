package main

import (
	"fmt"
	"io"
)

const e2eCommand = "e2e"

// e2eMain refuses: the control plane it starts (kube-apiserver and etcd
// through envtest) runs on Linux and macOS only.
func e2eMain(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "loadtest e2e: starts kube-apiserver and etcd, which this tool runs on Linux and macOS only")
	return 2
}
