package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipeguard/pipeguard/hack/benchreport/sysinfo"
)

// The files benchreport reads from its input directory.
const (
	machineFile = "machine.json" // benchreport machine
	webhookFile = "webhook.json" // hack/loadtest --json, the small case
	scaleFile   = "scale.json"   // hack/loadtest --json, many namespaces and policies
	agentFile   = "agent.json"   // hack/agentload --json
	goBenchFile = "gobench.txt"  // go test -bench output
)

// Review is one run of hack/loadtest, as its --json writes it. Latencies
// are in milliseconds.
type Review struct {
	Target           string  `json:"target"`
	Server           string  `json:"server"`
	Mode             string  `json:"mode"`
	Rate             int     `json:"rate"`
	Workers          int     `json:"workers"`
	Namespaces       int     `json:"namespaces"`
	Policies         int     `json:"policies"`
	Seconds          float64 `json:"seconds"`
	Sent             int     `json:"sent"`
	Dropped          int     `json:"dropped"`
	Errors           int     `json:"errors"`
	ReviewsPerSecond float64 `json:"reviewsPerSecond"`
	SendLagP99       float64 `json:"sendLagP99Ms"`
	ServiceP50       float64 `json:"serviceP50Ms"`
	ServiceP99       float64 `json:"serviceP99Ms"`
	P50              float64 `json:"p50Ms"`
	P90              float64 `json:"p90Ms"`
	P99              float64 `json:"p99Ms"`
	Max              float64 `json:"maxMs"`
	CPUPerReviewMs   float64 `json:"cpuPerReviewMs"`
	CoresUsed        float64 `json:"coresUsed"`
	LoadCoresUsed    float64 `json:"loadCoresUsed"`
	RSSBytes         int64   `json:"rssBytes"`
	PeakRSSBytes     int64   `json:"peakRssBytes"`
	StealPercent     float64 `json:"stealPercent"`
	Remade           int     `json:"remade"`
}

// AgentStats is one agent's share of an agentload case.
type AgentStats struct {
	Calls          int     `json:"calls"`
	Errors         int     `json:"errors"`
	CallsPerSecond float64 `json:"callsPerSecond"`
	P50            float64 `json:"p50Ms"`
	P90            float64 `json:"p90Ms"`
	P99            float64 `json:"p99Ms"`
	Max            float64 `json:"maxMs"`
	CPUPerCallMs   float64 `json:"cpuPerCallMs"`
	RSSBytes       int64   `json:"rssBytes"`
	PeakRSSBytes   int64   `json:"peakRssBytes"`
}

// AgentCase is one operation at one number of clients on both agents.
type AgentCase struct {
	Op              string      `json:"op"`
	Clients         int         `json:"clients"`
	Ungated         *AgentStats `json:"ungated"`
	Gated           *AgentStats `json:"gated"`
	OverheadPercent float64     `json:"overheadPercent"`
	P99Ratio        float64     `json:"p99Ratio"`
}

// AgentResults is what hack/agentload --json writes.
type AgentResults struct {
	AuditFilesystem string       `json:"auditFilesystem"`
	SliceMs         float64      `json:"sliceMs"`
	Cases           []*AgentCase `json:"cases"`
}

// Input is everything a report is made from.
type Input struct {
	Machine sysinfo.Machine
	Webhook []*Review
	Scale   []*Review
	Agent   *AgentResults
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
	if err := readJSON(filepath.Join(dir, scaleFile), &in.Scale, false); err != nil {
		return nil, err
	}
	var agent AgentResults
	if err := readJSON(filepath.Join(dir, agentFile), &agent, false); err != nil {
		return nil, err
	}
	if agent.Cases != nil {
		in.Agent = &agent
	}
	for _, r := range append(append([]*Review{}, in.Webhook...), in.Scale...) {
		if r == nil || (r.Mode != "open" && r.Mode != "closed") || r.Target == "" {
			return nil, fmt.Errorf("%s or %s: a run without a target or an open or closed mode", webhookFile, scaleFile)
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
