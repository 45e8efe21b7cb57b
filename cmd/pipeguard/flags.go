package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// namespaceLabels parses --namespace-labels NS=k=v[,k2=v2].
func namespaceLabels(values []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, v := range values {
		ns, pairs, ok := strings.Cut(v, "=")
		if !ok || ns == "" {
			return nil, fmt.Errorf("--namespace-labels %q: want NAMESPACE=key=value[,key2=value2]", v)
		}
		labels := out[ns]
		if labels == nil {
			labels = map[string]string{}
			out[ns] = labels
		}
		if pairs == "" {
			continue
		}
		for _, pair := range strings.Split(pairs, ",") {
			k, val, ok := strings.Cut(pair, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--namespace-labels %q: label %q is not key=value", v, pair)
			}
			labels[k] = val
		}
	}
	return out, nil
}

// Output formats.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// addOutputFlag adds -o/--output with the formats a command prints; the
// first is the default.
func addOutputFlag(c *cobra.Command, p *string, help string, formats ...string) {
	c.Flags().StringVarP(p, "output", "o", formats[0], fmt.Sprintf("output `FORMAT`: %s; %s", orList(formats), help))
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput rejects a format the command does not print.
func checkOutput(value string, formats ...string) error {
	if slices.Contains(formats, value) {
		return nil
	}
	return usageFailure("--output %q: want %s", value, orList(formats))
}

func orList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// printStructured writes v as indented JSON or as YAML.
func printStructured(w io.Writer, format string, v any) error {
	if format == outputYAML {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// singleDashLongFlags reads -name as --name for the long flags of the
// command args run, as the Go flag package did for earlier releases of
// pipeguard, so that scripts keep working; it says so on stderr. pflag would
// read -name as the short flags -n -a -m -e, which at best fails with a
// confusing message and at worst means something else.
func singleDashLongFlags(root *cobra.Command, args []string, stderr io.Writer) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		cmd = root
	}
	lookup := func(name string) *pflag.Flag {
		if name == "help" {
			return &pflag.Flag{Name: "help", NoOptDefVal: "true"}
		}
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		for p := cmd.Parent(); p != nil; p = p.Parent() {
			if f := p.PersistentFlags().Lookup(name); f != nil {
				return f
			}
		}
		return nil
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		var f *pflag.Flag
		hasValue := false
		switch {
		case strings.HasPrefix(a, "--"):
			var name string
			name, _, hasValue = strings.Cut(a[2:], "=")
			f = lookup(name)
		case len(a) == 2 && a[0] == '-':
			f = cmd.Flags().ShorthandLookup(a[1:])
		case len(a) > 2 && a[0] == '-':
			var name string
			name, _, hasValue = strings.Cut(a[1:], "=")
			if f = lookup(name); f != nil {
				fmt.Fprintf(stderr, "%s: warning: %s is read as -%s; long flags take two dashes\n", cmd.CommandPath(), a, a)
				a = "-" + a
			}
		}
		out = append(out, a)
		// A flag's value is passed on as it is, even if it starts with a dash.
		if f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
	}
	return out
}
