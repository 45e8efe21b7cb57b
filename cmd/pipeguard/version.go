package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pipeguard/pipeguard/internal/version"
)

// versionOptions are the flags of pipeguard version.
type versionOptions struct {
	output string
}

func newVersionCommand(name string, s streams) *cobra.Command {
	o := &versionOptions{}
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version of pipeguard",
		Long: `Prints the release version, the VCS revision it was built from ("-dirty"
when built from a modified tree), the Go version and the platform: the
same line pipeguard --version, pipeguard-webhook --version and
pipeguard-agent --version print.`,
		Example: examples(name, `
  %[1]s version
  %[1]s version -o json`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkOutput(o.output, outputTable, outputJSON, outputYAML); err != nil {
				return err
			}
			return o.run(s)
		},
	}
	addOutputFlag(c, &o.output, "table is the one line of --version", outputTable, outputJSON, outputYAML)
	return c
}

func (o *versionOptions) run(s streams) error {
	info := version.Get()
	if o.output == outputTable {
		fmt.Fprintln(s.Out, "pipeguard", info)
		return nil
	}
	return printStructured(s.Out, o.output, info)
}
