package app

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/groups/inflight"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/internal/testing/doctable"
)

// fixedBounds are the bounds docs/agent.md's Bounds table says are fixed,
// by the input cell of their row, with their value as the table writes it.
func fixedBounds() map[string]string {
	kib := func(n int) string { return strconv.Itoa(n>>10) + " KiB" }
	mib := func(n int) string { return strconv.Itoa(n>>20) + " MiB" }
	b := defaultHTTPBounds()
	share := func(n int) string { return fmt.Sprintf("%d of %d", limits.DefaultCallerShare(n), n) }
	want := map[string]string{
		"host operations of one group one caller holds at once (a caller: its pod, else its user)":                              share(limits.DefaultConcurrency),
		"one caller's share of the audit webhook buffer, in blocking mode (a caller: its pod, else container, SID or uid, pid)": "1/" + strconv.Itoa(audit.WebhookCallerShare),
		"ranges of unacknowledged records the webhook remembers":                                                                strconv.Itoa(audit.MaxUnsentRanges),
		"a receiver's refusal reason, and the list of undelivered records, in a checkpoint":                                     strconv.Itoa(audit.MaxUnsentText) + " bytes",
		"bearer token sent to the agent":                     kib(identity.MaxTokenBytes),
		"reuse of an accepted ServiceAccount token's review": identity.DefaultTokenCacheTTL.String(),
		"reuse of a refused token's review":                  identity.DefaultTokenFailureTTL.String(),
		"cached token reviews":                               strconv.Itoa(identity.MaxCachedTokens),
		"new (uncached) tokens one caller may have reviewed at once (a caller: its pod, else its uid or SID)": strconv.Itoa(identity.TokenReviewsPerCallerBurst),
		"new tokens one caller may have reviewed, once its burst is spent":                                    fmt.Sprintf("%v per second", float64(identity.TokenReviewsPerCallerRate)),
		"callers whose review budget is kept":                                                                 strconv.Itoa(identity.MaxTokenCallers),
		"TokenReview requests of the agent's own client":                                                      fmt.Sprintf("%d per second", int(identity.TokenReviewQPS)),
		"one TokenReview": identity.TokenReviewTimeout.String(),
		"request headers of one call (user agent and bearer token included)": kib(server.MaxHeaderListBytes),
		"one request message":                    kib(server.MaxRequestBytes),
		"calls in flight on one connection":      strconv.Itoa(server.MaxStreamsPerConnection),
		"open connections of one pipe or socket": strconv.Itoa(server.MaxConnectionsPerEndpoint),
		"open connections of one caller on one pipe or socket (a caller: its pod, else its process; see [Caller identity](#caller-identity))": strconv.Itoa(server.MaxConnectionsPerCaller),
		"a connection that sends nothing":      server.HandshakeTimeout.String(),
		"a connection with no call in flight":  server.IdleConnectionTimeout.String(),
		"a Windows path":                       strconv.Itoa(confine.MaxPathWindows) + " bytes",
		"a Linux path":                         strconv.Itoa(confine.MaxPathLinux) + " bytes",
		"host operations of one group at once": strconv.Itoa(limits.DefaultConcurrency),
		"objects one WMI query returns":        strconv.Itoa(wmi.MaxObjects),
		"WMI calls running at once (threads)":  strconv.Itoa(wmi.Workers),
		"one string value of a WMI answer (a string array's strings together)":                                                                kib(wmi.MaxValueBytes),
		"the settle check of a storage operation past its deadline (see [One storage operation at a time](#one-storage-operation-at-a-time))": inflight.SettleCheckTimeout.String(),
		"a volume, disk, share or iSCSI target held after the deadline of an operation with no settle check":                                  inflight.SettleTime.String(),
		"a volume, disk, share or iSCSI target held after its operation's deadline, whatever the settle checks say":                           inflight.MaxHold.String(),
		"one audit record": kib(audit.MaxRecordLine),
		"the request body of an audit record (Request level)":                                                                           kib(audit.MaxRecordBytes),
		"one string of an audit record (user agent, path, message, annotation value, user field, string of a request body), as written": strconv.Itoa(audit.MaxRecordString) + " bytes",
		"one map key of an audit record (annotations, user extra, request body), as written":                                            strconv.Itoa(audit.MaxRecordKey) + " bytes",
		"values of an audit record's user (groups and extra values together)":                                                           strconv.Itoa(audit.MaxRecordUserValues),
		"annotations of an audit record (besides the chain's and the cut's)":                                                            strconv.Itoa(audit.MaxRecordAnnotations),
		"one line `pipeguard audit` reads":                                                                                              mib(audit.MaxScanLine),
		"one EventList `pipeguard audit` reads from a receiver's saved stream":                                                          mib(review.MaxEventListBytes),
		"probe and metrics ports: request header bytes":                                                                                 kib(portMaxHeaderBytes),
		"probe port: request headers arrive within":                                                                                     b.Probes.ReadHeaderTimeout.String(),
		"metrics port: TLS handshake and request headers within":                                                                        b.Metrics.ReadHeaderTimeout.String(),
	}
	for name, p := range map[string]portBounds{"probe port": b.Probes, "metrics port": b.Metrics} {
		want[name+": open connections"] = strconv.Itoa(p.MaxConnections)
		want[name+": whole request read within"] = p.ReadTimeout.String()
		want[name+": answer written within"] = p.WriteTimeout.String()
		want[name+": a kept-alive connection idle for"] = p.IdleTimeout.String()
	}
	return want
}

// TestFixedBoundsDocumented checks every "fixed" row of docs/agent.md's
// Bounds table against the constant it documents, and that no constant is
// left out. The rows set by flags are checked against the flags' defaults
// by package main's test.
func TestFixedBoundsDocumented(t *testing.T) {
	want := fixedBounds()
	seen := map[string]bool{}
	for _, row := range doctable.Rows(t, "../../../docs/agent.md", "Bounds", 4) {
		input, value, setBy := row[0], row[1], row[2]
		if setBy != "fixed" {
			if !strings.HasPrefix(setBy, "`--") {
				t.Errorf("Bounds row %q: set by %q, want fixed or a flag", input, setBy)
			}
			continue
		}
		seen[input] = true
		w, ok := want[input]
		if !ok {
			t.Errorf("Bounds row %q is fixed but names no bound of the agent", input)
			continue
		}
		if got := firstWord(value); got != w {
			t.Errorf("Bounds row %q: %q, want %q", input, value, w)
		}
	}
	for input := range want {
		if !seen[input] {
			t.Errorf("docs/agent.md's Bounds table has no fixed row %q", input)
		}
	}
}

// firstWord is a table value without its comment in parentheses,
// durations normalized as time.Duration writes them.
func firstWord(v string) string {
	if i := strings.Index(v, " ("); i >= 0 {
		v = v[:i]
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d.String()
	}
	return v
}
