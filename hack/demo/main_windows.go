// Command demo needs kube-apiserver and etcd, which run on Linux and macOS;
// on Windows it only says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "demo: the local control plane runs on Linux and macOS only")
	os.Exit(2)
}
