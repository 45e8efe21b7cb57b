package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
)

// verifyOptions are the flags of pipeguard audit verify.
type verifyOptions struct {
	kubeconfig string
	node       string
	anchorNS   string
	output     string
	args       []string
}

func newAuditVerifyCommand(name string, s streams) *cobra.Command {
	o := &verifyOptions{}
	c := &cobra.Command{
		Use:   "verify [PATH|-] [--kubeconfig FILE --node NODE]",
		Short: "Verify the hash chain of an audit log: exit 0 only when it is intact",
		Long: `Recomputes the SHA-256 chain of a pipeguard-agent audit log across its
rotated files and reports the first edited, deleted, reordered or missing
record. With --kubeconfig and --node it also reads the chain head the
node's agent anchored in the cluster and fails when the files do not hold
that record with that hash, end before it, or break after it: without an
anchor, records cut from the end of the log cannot be detected.

` + auditSourceHelp + `

Exit code: 0 the whole chain is intact, 1 it is not, 2 the log or the
anchor cannot be read.`,
		Example: examples(name, `
  %[1]s audit verify /var/log/pipeguard/audit.log

  # Also against the chain head the node's agent anchored in the cluster
  %[1]s audit verify /var/log/pipeguard/audit.log --kubeconfig ~/.kube/config --node win-node-1

  # For a script: the findings as JSON, the verdict in the exit code
  %[1]s audit verify /var/log/pipeguard/audit.log -o json`),
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.args = args
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(c.Context(), s)
		},
	}
	f := c.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` of the cluster holding the node's audit anchor (with --node)")
	f.StringVar(&o.node, "node", "", "`NODE` whose agent wrote the log: its anchor must be in the files (with --kubeconfig)")
	f.StringVar(&o.anchorNS, "anchor-namespace", audit.DefaultAnchorNamespace, "`NAMESPACE` of the agents' anchor Leases")
	addOutputFlag(c, &o.output, "json and yaml hold the verdict, the findings and the files", outputTable, outputJSON, outputYAML)
	_ = c.MarkFlagFilename("kubeconfig")
	return c
}

func (o *verifyOptions) validate() error {
	if err := checkOutput(o.output, outputTable, outputJSON, outputYAML); err != nil {
		return err
	}
	if (o.kubeconfig == "") != (o.node == "") {
		return usageFailure("give --kubeconfig and --node together: the anchor is read from the cluster for that node")
	}
	return nil
}

// verifyView is what -o json and -o yaml print.
type verifyView struct {
	Intact   bool         `json:"intact"`
	Records  int          `json:"records"`
	First    uint64       `json:"firstSeq"`
	Last     uint64       `json:"lastSeq"`
	Files    []verifyFile `json:"files"`
	Problems []finding    `json:"problems,omitempty"`
	// MoreProblems counts the problems found beyond those listed.
	MoreProblems int       `json:"moreProblems,omitempty"`
	Notices      []finding `json:"notices,omitempty"`
	Anchor       string    `json:"anchor,omitempty"`
}

type verifyFile struct {
	Path      string `json:"path"`
	Records   int    `json:"records"`
	First     uint64 `json:"firstSeq"`
	Last      uint64 `json:"lastSeq"`
	TornBytes int    `json:"tornBytes,omitempty"`
}

type finding struct {
	Where   string `json:"where"`
	Message string `json:"message"`
}

// run recomputes the hash chain. Exit 0 only when the whole chain is
// intact: scripts outside the repository rely on it.
func (o *verifyOptions) run(ctx context.Context, s streams) error {
	src, err := auditSource(o.args, s.In)
	if err != nil {
		return inputFailure(err)
	}
	var opts review.VerifyOptions
	if o.node != "" {
		if opts.Anchor, err = review.ReadAnchorKubeconfig(ctx, o.kubeconfig, o.anchorNS, o.node); err != nil {
			return inputFailure(agentFlagError{err})
		}
	}
	rep, err := review.VerifyWith(src, opts)
	if err != nil {
		return inputFailure(err)
	}
	if o.output == outputTable {
		o.printTable(s.Out, rep, opts.Anchor)
	} else if err := printStructured(s.Out, o.output, view(rep, opts.Anchor)); err != nil {
		return err
	}
	if !rep.OK() {
		return exitCode(exitDenied)
	}
	return nil
}

func (o *verifyOptions) printTable(w io.Writer, rep *review.Report, a *audit.Anchor) {
	for _, n := range rep.Notices {
		fmt.Fprintf(w, "notice: %s\n", withFlags(n))
	}
	if !rep.OK() {
		if len(rep.Problems) == 0 { // no records at all
			fmt.Fprintln(w, "FAIL: the log holds no records")
			return
		}
		fmt.Fprintf(w, "FAIL: %s\n", withFlags(rep.Problems[0]))
		for _, p := range rep.Problems[1:] {
			fmt.Fprintf(w, "also: %s\n", withFlags(p))
		}
		if rep.MoreProblems > 0 {
			fmt.Fprintf(w, "… and %d more %s (only the first %d are listed)\n",
				rep.MoreProblems, plural(rep.MoreProblems, "problem", "problems"), len(rep.Problems))
		}
		return
	}
	fmt.Fprintf(w, "OK: audit chain intact: %d records, seq %d–%d, in %d %s\n", rep.Records, rep.First, rep.Last, len(rep.Files), plural(len(rep.Files), "file", "files"))
	if a != nil {
		fmt.Fprintf(w, "OK: the anchor of node %s is in the chain: %s\n", o.node, a)
	}
}

func view(rep *review.Report, a *audit.Anchor) verifyView {
	v := verifyView{Intact: rep.OK(), Records: rep.Records, First: rep.First, Last: rep.Last, Files: []verifyFile{}, MoreProblems: rep.MoreProblems}
	for _, f := range rep.Files {
		v.Files = append(v.Files, verifyFile{Path: f.Path, Records: f.Records, First: f.First, Last: f.Last, TornBytes: f.TornBytes})
	}
	for _, p := range rep.Problems {
		p = withFlags(p)
		v.Problems = append(v.Problems, finding{Where: p.Where, Message: p.Msg})
	}
	for _, n := range rep.Notices {
		n = withFlags(n)
		v.Notices = append(v.Notices, finding{Where: n.Where, Message: n.Msg})
	}
	if a != nil {
		v.Anchor = a.String()
	}
	return v
}

// withFlags names the agent's options in a finding by their flags.
func withFlags(f review.Finding) review.Finding { return f.Named(flagname.Of) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
