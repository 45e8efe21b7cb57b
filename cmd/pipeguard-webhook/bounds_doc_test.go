package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/webhook"
)

// boundsTable returns the rows of the table in docs/install.md's Bounds
// section, by their first cell: the bound, the flag and what exceeding it
// gets.
func boundsTable(t *testing.T) map[string][3]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Bounds\n")
	if !ok {
		t.Fatal("docs/install.md has no Bounds section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string][3]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| input ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Fatalf("row %q has %d cells, want 4: input, bound, flag, what exceeds it gets", line, len(cells))
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[cells[0]] = [3]string{cells[1], strings.Trim(cells[2], "`"), cells[3]}
	}
	return rows
}

// flagDefaults returns pipeguard-webhook's flags with their defaults, as
// --help prints them.
func flagDefaults(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--help")
	cmd.Env = append(os.Environ(), asWebhookEnv+"=1")
	var out bytes.Buffer
	cmd.Stderr = &out
	_ = cmd.Run()
	defaults := map[string]string{}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)(?: \w+)?\n\s+(.*)$`)
	defaultOf := regexp.MustCompile(`\(default "?([^")]*)"?\)$`)
	for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
		def := ""
		if d := defaultOf.FindStringSubmatch(m[2]); d != nil {
			def = d[1]
		}
		defaults["--"+m[1]] = def
	}
	if len(defaults) == 0 {
		t.Fatalf("no flags in --help:\n%s", out.String())
	}
	return defaults
}

// TestBoundsTable: the Bounds table of docs/install.md lists every bound
// of webhook/limits.go with its value, the flag that sets it with the
// flag's default, and nothing else.
func TestBoundsTable(t *testing.T) {
	bytesOf := func(n int) string { return strconv.Itoa(n) + " bytes" }
	want := map[string]struct {
		bound any // int, string (a prefix of the cell) or time.Duration (its first word)
		flag  string
	}{
		"AdmissionReview body":                                                              {bytesOf(webhook.MaxReviewBytes), ""},
		"hostPath volumes of one object":                                                    {webhook.MaxHostPathVolumes, ""},
		"volumeMounts of hostPath volumes of one object":                                    {webhook.MaxHostPathMounts, ""},
		"bytes of host paths over one object's mounts":                                      {bytesOf(webhook.MaxHostPathBytes), ""},
		"HostProcess containers of one object":                                              {webhook.MaxHostProcessContainers, ""},
		"persistentVolumeClaim volumes of one object whose PersistentVolumes are looked up": {webhook.MaxClaimVolumes, ""},
		"review time":                               {"the API server's `?timeout=`", ""},
		"reviews read and decided at once":          {webhook.DefaultMaxInFlight, "--max-reviews-in-flight"},
		"open connections, TLS handshakes included": {webhook.DefaultMaxConnections, "--max-connections"},
		"reading a request's headers":               {webhook.ReadHeaderTimeout, ""},
		"reading a whole request, body included, from its start (a wait for a slot counts)": {webhook.ReadTimeout, ""},
		"a request's headers":                                     {bytesOf(webhook.MaxHeaderBytes), ""},
		"answering a review":                                      {webhook.WriteTimeout, ""},
		"an idle kept-alive connection":                           {webhook.IdleTimeout, ""},
		"the messages of a denial (or a dry run) in its log line": {bytesOf(webhook.MaxLoggedDenialBytes), ""},
		"who may send reviews":                                    {"any caller the network lets through", "--client-ca-file"},
		"each other value of a review's log line (name, user, peer, a dry run's path)": {bytesOf(webhook.MaxLoggedValueBytes), ""},
	}
	rows := boundsTable(t)
	flags := flagDefaults(t)
	for input, w := range want {
		row, ok := rows[input]
		if !ok {
			t.Errorf("the Bounds table has no row %q", input)
			continue
		}
		bound, flag := row[0], row[1]
		first, _, _ := strings.Cut(bound, " ")
		switch b := w.bound.(type) {
		case int:
			if first != strconv.Itoa(b) {
				t.Errorf("row %q: bound %q, want %d", input, bound, b)
			}
		case string:
			if !strings.HasPrefix(bound, b) {
				t.Errorf("row %q: bound %q, want it to start with %q", input, bound, b)
			}
		case time.Duration:
			if d, err := time.ParseDuration(first); err != nil || d != b {
				t.Errorf("row %q: bound %q, want %s", input, bound, b)
			}
		}
		if flag != w.flag {
			t.Errorf("row %q: flag %q, want %q", input, flag, w.flag)
		}
		if def, ok := flags[flag]; flag != "" && (!ok || (def != "" && def != first)) {
			t.Errorf("row %q: flag %s has default %q (known: %v); the table says %q", input, flag, def, ok, first)
		}
		if row[2] == "" {
			t.Errorf("row %q does not say what exceeding it gets", input)
		}
	}
	for input := range rows {
		if _, ok := want[input]; !ok {
			t.Errorf("the Bounds table lists %q, which this test does not know: check it against webhook/limits.go and add it here", input)
		}
	}
	review := rows["review time"][0]
	for _, d := range []time.Duration{webhook.DefaultReviewTimeout, webhook.MaxReviewTimeout} {
		if !strings.Contains(review, d.String()) {
			t.Errorf("row review time: %q does not name %s", review, d)
		}
	}
	manifests, err := os.ReadFile("../../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`timeoutSeconds: (\d+)`).FindAllStringSubmatch(string(manifests), -1) {
		if !strings.Contains(review, m[1]+"s in config/webhook") {
			t.Errorf("row review time: %q, but config/webhook sets timeoutSeconds %s", review, m[1])
		}
	}
}
