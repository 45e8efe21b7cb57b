// Package results holds the results the benchmark tools write as JSON and
// hack/bench/report reads: one definition of the file format for both sides.
package results

// Decisions counts the answers to one kind of request.
type Decisions struct {
	Allowed int `json:"allowed"`
	Denied  int `json:"denied"`
	Errors  int `json:"errors"`
}

// Review is one measured run of hack/bench/loadtest. Latencies are in
// milliseconds; open-loop latencies count from the time a request was due,
// not from when it left.
type Review struct {
	Target string `json:"target"`
	// Server is "process" when the server ran in a process of its own,
	// "in-process" when it shared the load generator's.
	Server     string  `json:"server"`
	Mode       string  `json:"mode"` // "open" or "closed"
	Rate       int     `json:"rate,omitempty"`
	Workers    int     `json:"workers,omitempty"`
	Namespaces int     `json:"namespaces"`
	Policies   int     `json:"policies"`
	Seconds    float64 `json:"seconds"`
	Sent       int     `json:"sent"`
	Dropped    int     `json:"dropped"`
	Errors     int     `json:"errors"`
	// ErrorKinds counts errors by kind: timeout, http-status,
	// wrong-decision, wrong-uid, other.
	ErrorKinds map[string]int `json:"errorKinds,omitempty"`
	FirstError string         `json:"firstError,omitempty"`
	// ReviewsPerSecond counts correct answers over the run's wall time.
	ReviewsPerSecond float64 `json:"reviewsPerSecond"`
	// SendLagP50 and SendLagP99 say, in open loop, how late requests left
	// after they were due (the load generator's own delay, part of every
	// latency above).
	SendLagP50 float64 `json:"sendLagP50Ms,omitempty"`
	SendLagP99 float64 `json:"sendLagP99Ms,omitempty"`
	// ServiceP50 and ServiceP99 are, in open loop, latencies counted from
	// when requests left rather than from when they were due.
	ServiceP50 float64 `json:"serviceP50Ms,omitempty"`
	ServiceP99 float64 `json:"serviceP99Ms,omitempty"`
	P50        float64 `json:"p50Ms"`
	P90        float64 `json:"p90Ms"`
	P99        float64 `json:"p99Ms"`
	Max        float64 `json:"maxMs"`
	Mean       float64 `json:"meanMs"`
	// RSSBytes and PeakRSSBytes are the serving process's VmRSS at the end
	// of the run and VmHWM since it started. With Server "process" that is
	// the webhook server alone, started afresh for this run; in-process it
	// is the server and the load generator together.
	// CPUPerReviewMs is the serving process's CPU time (user and system)
	// over the run, per correct answer. Unlike reviews/s it hardly depends
	// on what else the machine is running, so the ratio of two targets'
	// values estimates the ratio of their saturated throughputs even on a
	// busy machine. Zero where /proc/<pid>/stat cannot be read.
	CPUPerReviewMs float64 `json:"cpuPerReviewMs"`
	// CoresUsed is the serving process's CPU time over the run's wall
	// time; LoadCoresUsed the load generator's, when it runs apart.
	CoresUsed     float64 `json:"coresUsed"`
	LoadCoresUsed float64 `json:"loadCoresUsed,omitempty"`
	// StealPercent is the share of the machine's CPU time the hypervisor
	// gave to other guests during the run: on a virtual machine, a run
	// with much of it measured a slower machine.
	StealPercent float64 `json:"stealPercent"`
	// Remade counts how often the run was made again because the
	// hypervisor took more CPU time than --steal-limit; this result is
	// the one that lost the least.
	Remade       int                   `json:"remade,omitempty"`
	RSSBytes     int64                 `json:"rssBytes"`
	PeakRSSBytes int64                 `json:"peakRssBytes"`
	Decisions    map[string]*Decisions `json:"decisions"`
}

// AgentStats is one agent's share of an AgentCase. Latencies are in milliseconds.
type AgentStats struct {
	Calls      int     `json:"calls"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"firstError,omitempty"`
	Seconds    float64 `json:"seconds"`
	// CallsPerSecond counts successful calls over the time the agent was
	// under load.
	CallsPerSecond float64 `json:"callsPerSecond"`
	P50            float64 `json:"p50Ms"`
	P90            float64 `json:"p90Ms"`
	P99            float64 `json:"p99Ms"`
	Max            float64 `json:"maxMs"`
	// CPUPerCallMs and CoresUsed are the agent process's CPU time per
	// successful call and over the time it was under load.
	CPUPerCallMs float64 `json:"cpuPerCallMs"`
	CoresUsed    float64 `json:"coresUsed"`
	// RSSBytes and PeakRSSBytes are the agent process's VmRSS after the
	// case and VmHWM since it started.
	RSSBytes     int64 `json:"rssBytes"`
	PeakRSSBytes int64 `json:"peakRssBytes"`
}

// AgentCase is one operation at one number of concurrent clients, on both
// agents.
type AgentCase struct {
	Op      string      `json:"op"`
	Clients int         `json:"clients"`
	Ungated *AgentStats `json:"ungated"`
	Gated   *AgentStats `json:"gated"`
	// OverheadPercent is how much longer the gated agent takes for the same
	// number of calls: (ungated calls/s / gated calls/s - 1) × 100.
	OverheadPercent float64 `json:"overheadPercent"`
	// P99Ratio is the gated p99 over the ungated p99.
	P99Ratio float64 `json:"p99Ratio"`
}

// AgentResults is what a run of hack/bench/agentload measured.
type AgentResults struct {
	// AuditFilesystem is the type of the file system holding the audit
	// log (ext4, xfs, tmpfs…).
	AuditFilesystem string       `json:"auditFilesystem"`
	SliceMs         float64      `json:"sliceMs"`
	Cases           []*AgentCase `json:"cases"`
}
