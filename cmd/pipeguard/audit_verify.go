package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/anchor"
)

// auditVerify recomputes the hash chain. Exit 0 only when the whole chain
// is intact: scripts outside the repository rely on it.
func auditVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pipeguard audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster holding the node's audit anchor (with --node)")
	node := fs.String("node", "", "node whose agent wrote the log: its anchor must be in the files (with --kubeconfig)")
	anchorNS := fs.String("anchor-namespace", anchor.DefaultNamespace, "namespace of the agents' anchor Leases")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: pipeguard audit verify [PATH|-] [--kubeconfig FILE --node NODE]\n\nRecomputes the SHA-256 chain of a pipeguard-agent audit log across its\nrotated files and reports the first edited, deleted, reordered or missing\nrecord. With --kubeconfig and --node it also reads the chain head the\nnode's agent anchored in the cluster and fails when the files do not hold\nthat record with that hash, end before it, or break after it: without an\nanchor, records cut from the end of the log cannot be detected.\n"+auditSourceHelp+"\nExit code: 0 the whole chain is intact, 1 it is not, 2 the log or the anchor cannot be read.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlagSet(fs, args); !ok {
		return code
	}
	if (*kubeconfig == "") != (*node == "") {
		fmt.Fprintln(stderr, "pipeguard audit verify: give --kubeconfig and --node together: the anchor is read from the cluster for that node")
		return exitBadInput
	}
	src, _, err := auditSource(fs, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit verify: %v\n", err)
		return exitBadInput
	}
	var opts audit.VerifyOptions
	if *node != "" {
		if opts.Anchor, err = anchor.ReadKubeconfig(context.Background(), *kubeconfig, *anchorNS, *node); err != nil {
			fmt.Fprintf(stderr, "pipeguard audit verify: %v\n", err)
			return exitBadInput
		}
	}
	rep, err := audit.VerifyWith(src, opts)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard audit verify: %v\n", err)
		return exitBadInput
	}
	for _, n := range rep.Notices {
		fmt.Fprintf(stdout, "notice: %s\n", withFlags(n))
	}
	if !rep.OK() {
		fmt.Fprintf(stdout, "FAIL: %s\n", withFlags(rep.Problems[0]))
		for _, p := range rep.Problems[1:] {
			fmt.Fprintf(stdout, "also: %s\n", withFlags(p))
		}
		return exitDenied
	}
	fmt.Fprintf(stdout, "OK: audit chain intact: %d records, seq %d–%d, in %d %s\n", rep.Records, rep.First, rep.Last, len(rep.Files), plural(len(rep.Files), "file", "files"))
	if opts.Anchor != nil {
		fmt.Fprintf(stdout, "OK: the anchor of node %s is in the chain: %s\n", *node, opts.Anchor)
	}
	return exitOK
}

// withFlags names the agent's options in a finding by their flags.
func withFlags(f audit.Finding) audit.Finding {
	f.Msg = agentFlags.Replace(f.Msg)
	return f
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
