package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// The files report reads from its input directory.
const (
	machineFile = "machine.json" // report machine
	webhookFile = "webhook.json" // hack/bench/loadtest --json
	// gatekeeperFile describes the Gatekeeper the gatekeeper runs of
	// webhook.json measured (hack/bench/loadtest --gatekeeper-json).
	gatekeeperFile = "gatekeeper.json"
	e2eFile        = "e2e.json"    // hack/bench/loadtest e2e --json
	agentFile      = "agent.json"  // hack/bench/agentload --json
	goBenchFile    = "gobench.txt" // go test -bench output
)

// The runs of hack/bench/loadtest and hack/bench/agentload, as their --json
// writes them.
type (
	Review       = results.Review
	AgentStats   = results.AgentStats
	AgentCase    = results.AgentCase
	AgentResults = results.AgentResults
)

// GatekeeperPeer is what gatekeeper.json holds: the loadtest's
// GatekeeperPeer (hack/bench/loadtest/gatekeeper_rule.go) as it writes it.
type GatekeeperPeer struct {
	// Version is the Gatekeeper module version of the executable measured.
	Version string `json:"version"`
	// Rego is the ConstraintTemplate's rego; Kinds what the Constraint
	// matches.
	Rego  string   `json:"rego"`
	Kinds []string `json:"kinds"`
	// Args is Gatekeeper's command line.
	Args []string `json:"args"`
}

// Input is everything a report is made from.
type Input struct {
	Machine sysinfo.Machine
	Webhook []*Review
	// Gatekeeper describes the gatekeeper target; nil when gatekeeper.json
	// is absent.
	Gatekeeper *GatekeeperPeer
	E2E        []*results.Pods
	VAPRule    string
	Agent      *AgentResults
	// GoBench holds the lines of the Go benchmarks' output worth showing:
	// package headers and results.
	GoBench []string
}

// readInput reads the files of dir. The machine description and the
// webhook runs are required; the others are optional.
func readInput(dir string) (*Input, error) {
	in := &Input{}
	if err := readJSON(filepath.Join(dir, machineFile), &in.Machine, true); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, webhookFile), &in.Webhook, true); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, gatekeeperFile), &in.Gatekeeper, false); err != nil {
		return nil, err
	}
	if gk := in.Gatekeeper; gk != nil && (gk.Version == "" || strings.TrimSpace(gk.Rego) == "" || len(gk.Kinds) == 0) {
		return nil, fmt.Errorf("%s: Gatekeeper's version, its rule's rego and the kinds it matches are all required", gatekeeperFile)
	}
	var e2e results.EndToEnd
	if err := readJSON(filepath.Join(dir, e2eFile), &e2e, false); err != nil {
		return nil, err
	}
	in.E2E, in.VAPRule = e2e.Runs, e2e.VAPRule
	var agent AgentResults
	if err := readJSON(filepath.Join(dir, agentFile), &agent, false); err != nil {
		return nil, err
	}
	if agent.Cases != nil {
		in.Agent = &agent
	}
	for _, r := range in.Webhook {
		if r == nil || r.Target == "" {
			return nil, fmt.Errorf("%s: a run without a target", webhookFile)
		}
	}
	if in.Agent != nil {
		for _, c := range in.Agent.Cases {
			if c == nil || c.Gated == nil || c.Ungated == nil {
				return nil, fmt.Errorf("%s: a case without both agents", agentFile)
			}
		}
	}
	f, err := os.Open(filepath.Join(dir, goBenchFile))
	if err != nil {
		if os.IsNotExist(err) {
			return in, nil
		}
		return nil, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		line := strings.TrimRight(s.Text(), " \t")
		if strings.HasPrefix(line, "pkg: ") || strings.HasPrefix(line, "Benchmark") || strings.HasPrefix(line, "FAIL") {
			in.GoBench = append(in.GoBench, line)
		}
	}
	return in, s.Err()
}

func readJSON(path string, v any, required bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) && !required {
			return nil
		}
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
