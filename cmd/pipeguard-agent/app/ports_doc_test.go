package app

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPortBoundsDocumented checks the table of docs/agent.md's "Probe and
// metrics ports" against the bounds the agent serves with, row by row.
func TestPortBoundsDocumented(t *testing.T) {
	b := defaultHTTPBounds()
	want := map[string]string{}
	for port, p := range map[string]portBounds{"probes": b.Probes, "metrics": b.Metrics} {
		want[port+"|open connections"] = strconv.Itoa(p.MaxConnections)
		want[port+"|whole request read within"] = p.ReadTimeout.String()
		want[port+"|answer written within"] = p.WriteTimeout.String()
		want[port+"|a kept-alive connection idle for"] = p.IdleTimeout.String()
	}
	want["probes|request headers arrive within"] = b.Probes.ReadHeaderTimeout.String()
	want["metrics|TLS handshake and request headers within"] = b.Metrics.ReadHeaderTimeout.String()
	want["both|request header bytes"] = strconv.Itoa(portMaxHeaderBytes>>10) + " KiB"

	doc, err := os.ReadFile("../../../docs/agent.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Probe and metrics ports\n")
	if !ok {
		t.Fatal(`docs/agent.md has no section "Probe and metrics ports"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	got := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 || strings.TrimSpace(cells[0]) == "port" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		value := strings.TrimSpace(cells[2])
		if i := strings.Index(value, " ("); i >= 0 {
			value = value[:i]
		}
		if d, err := time.ParseDuration(value); err == nil {
			value = d.String()
		}
		got[strings.TrimSpace(cells[0])+"|"+strings.TrimSpace(cells[1])] = value
	}
	for row, v := range want {
		if got[row] != v {
			t.Errorf("docs/agent.md, Probe and metrics ports, row %q: %q, want %q", row, got[row], v)
		}
	}
	for row := range got {
		if _, ok := want[row]; !ok {
			t.Errorf("docs/agent.md, Probe and metrics ports, row %q names no bound of the agent", row)
		}
	}
}
