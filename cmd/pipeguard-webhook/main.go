// Command pipeguard-webhook serves pipeguard's validating admission webhook
// and keeps its policies in step with the cluster's PipeAccessPolicies.
// Its flags and how it starts are in package app (NewCommand).
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
)

func main() {
	os.Exit(app.NewCommand(ctrl.SetupSignalHandler()).Execute(os.Args[1:]))
}
