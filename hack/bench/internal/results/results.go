// Package results holds the results the benchmark tools write as JSON and
// hack/bench/report reads: one definition of the file format for both sides,
// and the medians both print.
package results

import (
	"slices"
	"time"
)

// Review is one measured run of hack/bench/loadtest: one target with one
// mix of reviews (deployed, pipes or denials) in one round, closed loop.
// Latencies are in milliseconds.
type Review struct {
	Target     string `json:"target"`
	Mix        string `json:"mix"`
	Round      int    `json:"round"`
	Workers    int    `json:"workers"`
	Namespaces int    `json:"namespaces"`
	Policies   int    `json:"policies"`
	// ReviewBytes is the mean size of the AdmissionReviews sent.
	ReviewBytes int     `json:"reviewBytes"`
	Seconds     float64 `json:"seconds"`
	Sent        int     `json:"sent"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"firstError,omitempty"`
	// ReviewsPerSecond counts correct answers over the run's wall time.
	ReviewsPerSecond float64 `json:"reviewsPerSecond"`
	P50              float64 `json:"p50Ms"`
	P99              float64 `json:"p99Ms"`
	// CPUPerReviewMs is the serving process's CPU time (user and system)
	// over the run, per correct answer: unlike reviews/s it hardly depends
	// on what else the machine runs. Zero where /proc cannot be read.
	CPUPerReviewMs float64 `json:"cpuPerReviewMs"`
	// PeakRSSBytes is the serving process's VmHWM; each run starts its
	// server afresh.
	PeakRSSBytes int64 `json:"peakRssBytes"`
}

// Median is the median of vs (the mean of the middle two for an even
// count), or 0 for none.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(vs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Quantile sorts latencies in place and returns their nearest-rank
// quantile q in milliseconds, or 0 for none.
func Quantile(latencies []time.Duration, q float64) float64 {
	if len(latencies) == 0 {
		return 0
	}
	slices.Sort(latencies)
	i := int(float64(len(latencies))*q+0.999999) - 1
	return Ms(latencies[min(max(i, 0), len(latencies)-1)])
}

// Ms is d in milliseconds, to the microsecond.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// InMix returns the runs of mix.
func InMix(runs []*Review, mix string) []*Review {
	return slices.DeleteFunc(slices.Clone(runs), func(r *Review) bool { return r.Mix != mix })
}

// RoundRatios returns, for every round and mix in which both target and
// ref were measured, metric(target's run) / metric(ref's run).
func RoundRatios(runs []*Review, target, ref string, metric func(*Review) float64) []float64 {
	return paired(runs, target, ref, func(r *Review) (string, [2]any) { return r.Target, [2]any{r.Round, r.Mix} },
		func(r, b *Review) (float64, bool) { return metric(r) / metric(b), metric(b) > 0 })
}

// paired returns f(r, b) for every run r of target and b of ref that have
// the same key, where f says so; id gives a run's target and key.
func paired[R any, K comparable](runs []R, target, ref string, id func(R) (string, K), f func(r, b R) (float64, bool)) []float64 {
	byKey := map[K]R{}
	for _, r := range runs {
		if name, k := id(r); name == ref {
			byKey[k] = r
		}
	}
	var out []float64
	for _, r := range runs {
		name, k := id(r)
		if b, ok := byKey[k]; ok && name == target {
			if v, ok := f(r, b); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// Of returns metric of every run of target.
func Of(runs []*Review, target string, metric func(*Review) float64) []float64 {
	var out []float64
	for _, r := range runs {
		if r.Target == target {
			out = append(out, metric(r))
		}
	}
	return out
}

// EndToEnd is what hack/bench/loadtest e2e measured.
type EndToEnd struct {
	// VAPRule is the CEL expression of the ValidatingAdmissionPolicy
	// measured beside pipeguard.
	VAPRule string  `json:"vapRule"`
	Runs    []*Pods `json:"runs"`
}

// Pods is one target's share of one round of hack/bench/loadtest e2e: Pods
// pods of Kind (one of PodKinds or KindDenied) created through
// kube-apiserver, one after another, in the namespace of Target's admission
// check (none, floor, pipeguard, validatingadmissionpolicy or gatekeeper).
type Pods struct {
	Target string  `json:"target"`
	Round  int     `json:"round"`
	Kind   string  `json:"kind"`
	Pods   int     `json:"pods"`
	P50    float64 `json:"p50Ms"`
}

// PodKinds are the kinds of pods e2e creates that every target admits:
// hostpath (CSI node pods with pipe mounts, in a namespace with the
// allowance), no-hostpath, and KindOrdinaryHostPath.
var PodKinds = []string{"hostpath", "no-hostpath", KindOrdinaryHostPath}

// KindOrdinaryHostPath is the kind of pods whose hostPath volumes are
// ordinary host directories, for which the API server does not call
// pipeguard's webhook. KindDenied is the kind of pods that mount a CSI
// Proxy pipe without an allowance: every checking target denies them, and
// their p50 is the time to the denial; the floor and no check admit them.
const KindOrdinaryHostPath, KindDenied = "ordinary-hostpath", "denied"

// AddedP50 returns, for every round in which both were measured, the p50
// of target's pods of kind minus that of ref's.
func AddedP50(runs []*Pods, target, ref, kind string) []float64 {
	return paired(runs, target, ref, func(r *Pods) (string, [2]any) { return r.Target, [2]any{r.Round, r.Kind} },
		func(r, b *Pods) (float64, bool) { return r.P50 - b.P50, r.Kind == kind })
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
	P99            float64 `json:"p99Ms"`
	// CPUPerCallMs and CoresUsed are the agent process's CPU time per
	// successful call and over the time it was under load.
	CPUPerCallMs float64 `json:"cpuPerCallMs"`
	CoresUsed    float64 `json:"coresUsed"`
	// PeakRSSBytes is the agent process's VmHWM since it started.
	PeakRSSBytes int64 `json:"peakRssBytes"`
}

// AgentCase is one operation at one number of concurrent clients, on both
// agents.
type AgentCase struct {
	Op      string      `json:"op"`
	Clients int         `json:"clients"`
	Ungated *AgentStats `json:"ungated"`
	Gated   *AgentStats `json:"gated"`
	// Rounds is how many rounds loaded every agent of the case, a slice each.
	Rounds int `json:"rounds"`
	// Ratio is the median over the rounds of the gated agent's calls/s
	// over the ungated agent's in the same round.
	Ratio float64 `json:"ratio"`
	// FsyncOnly, for a mutating op, is an agent that neither attributes nor
	// gates a call but writes a record through the same audit log writer
	// and waits for its fsync before each call, committing in groups as the
	// gated agent's records do. OverFsyncOnly (ms)
	// and FsyncOnlyRatio are the medians over the rounds of the gated p50
	// minus, and over, the fsync-only p50 of the same round.
	FsyncOnly      *AgentStats `json:"fsyncOnly,omitempty"`
	OverFsyncOnly  float64     `json:"overFsyncOnlyMs,omitempty"`
	FsyncOnlyRatio float64     `json:"fsyncOnlyRatio,omitempty"`
}

// AgentResults is what a run of hack/bench/agentload measured.
type AgentResults struct {
	// AuditFilesystem is the type of the file system holding the audit
	// log (ext4, xfs, tmpfs…).
	AuditFilesystem string       `json:"auditFilesystem"`
	SliceMs         float64      `json:"sliceMs"`
	Cases           []*AgentCase `json:"cases"`
}

// GatekeeperPeer describes the OPA Gatekeeper that hack/bench/loadtest
// measured (its --gatekeeper-json), for the report: Version is the Gatekeeper module version the executable was built from,
// Rego the ConstraintTemplate's rego, Kinds what the Constraint matches and
// Args Gatekeeper's command line, without the executable.
type GatekeeperPeer struct {
	Version string   `json:"version"`
	Rego    string   `json:"rego"`
	Kinds   []string `json:"kinds"`
	Args    []string `json:"args"`
}
