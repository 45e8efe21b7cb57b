// Command pipeguard-agent serves the CSI Proxy API groups on the node, on the
// same named pipes as CSI Proxy, with every path confined to the kubelet path
// and the working dirs. See docs/agent.md.
//
// Its command line, and what it runs, are package app's (app.NewCommand).
package main

import (
	"context"
	"os"

	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/app"
)

func main() {
	os.Exit(app.NewCommand(context.Background()).Execute(os.Args[1:]))
}
