package main

import "github.com/spf13/cobra"

func newPolicyCommand(name string, s streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "policy",
		Short: "Evaluate manifests against pipe access policies and test policies",
		Long: `Evaluates manifests against PipeAccessPolicies offline, as the admission
webhook would decide on them, and runs rego tests and PolicyTestSuite files.`,
		Example: examples(name, `
  # Which objects of a manifest would admission deny?
  %[1]s policy eval -f daemonset.yaml --namespace-labels csi-smb=pipeguard.io/allow-csi-proxy=true

  # Run the rego tests in a directory and the test suites beside them
  %[1]s policy test ./policies -v`),
		RunE: groupRun,
	}
	c.AddCommand(newPolicyEvalCommand(name, s), newPolicyTestCommand(name, s))
	return c
}
