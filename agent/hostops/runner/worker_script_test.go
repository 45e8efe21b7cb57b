package runner

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The bootstrap is the only script text a worker's command line carries:
// it must be a constant that takes nothing from a request, and it must read
// every request value as data from its standard input.
func TestWorkerBootstrapTakesRequestValuesOnlyAsData(t *testing.T) {
	b := WorkerBootstrap
	if !strings.HasPrefix(b, WorkerMarker+" ") {
		t.Errorf("the bootstrap does not start with its marker %q", WorkerMarker)
	}
	for _, bad := range []struct{ text, why string }{
		{`"`, "double quotes, whose escaping on a Windows command line differs between parsers"},
		{"\n", "a newline, which a command line may not carry intact"},
		{"%", "a format verb: the bootstrap is never formatted"},
		{"{{", "a template action: the bootstrap is never templated"},
		{"exit", "exit, which would end the worker"},
		{"Invoke-Expression", "Invoke-Expression, which would run text as code"},
		{"iex ", "iex, which would run text as code"},
	} {
		if strings.Contains(b, bad.text) {
			t.Errorf("the bootstrap contains %s", bad.why)
		}
	}
	// It reads no $Env: variable itself, and no variable holds a request
	// value before it is parsed from standard input.
	if m := regexp.MustCompile(`(?i)\$env:`).FindString(b); m != "" {
		t.Errorf("the bootstrap reads %s itself; request values reach it only on standard input", m)
	}
	for _, want := range []string{
		"$ErrorActionPreference='Stop'",
		"[Console]::OpenStandardInput()",
		"$line = $stdin.ReadLine()",
		"ConvertFrom-Json $line",
		"[Environment]::SetEnvironmentVariable($v.Name, [string]$v.Value, 'Process')",
		"[Environment]::SetEnvironmentVariable($n, $saved[$n], 'Process')", // put back afterwards
		"[ScriptBlock]::Create($scripts[[string]$req.run])",
		"Out-String",
		"$_.Exception.Message",
		"ConvertTo-Json $ans -Compress",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the bootstrap lacks %q", want)
		}
	}
	// Braces and parentheses balance, so no text is left hanging for a
	// request to complete.
	for _, pair := range []string{"{}", "()", "[]"} {
		if o, c := strings.Count(b, pair[:1]), strings.Count(b, pair[1:]); o != c {
			t.Errorf("the bootstrap has %d %q and %d %q", o, pair[:1], c, pair[1:])
		}
	}
}

func TestWorkerArgsMatchTheOneOffCommand(t *testing.T) {
	one := PowerShell("Get-Disk").Args
	args := WorkerArgs()
	if !slices.Equal(args[:len(args)-1], one[:len(one)-1]) {
		t.Fatalf("worker options %q, want those of a one-off command %q", args[:len(args)-1], one[:len(one)-1])
	}
	if args[len(args)-1] != WorkerBootstrap {
		t.Fatal("the worker's -Command is not the bootstrap")
	}
}

// Every variable the bootstrap sets for a request (request values, an SMB
// password or a CHAP secret among them) is removed once the request is
// answered, and $Error cleared, so that the next request's script cannot
// read them.
func TestWorkerBootstrapForgetsEachRequest(t *testing.T) {
	b := WorkerBootstrap
	loop := b[strings.Index(b, "while ("):]
	removed := map[string]bool{}
	for _, n := range strings.Split(WorkerRequestVariables, ",") {
		removed[strings.ToLower(n)] = true
	}
	kept := map[string]bool{"erroractionpreference": true, "progresspreference": true}
	set := regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)\s*=[^=]|foreach \(\$([A-Za-z_][A-Za-z0-9_]*) in`)
	for _, m := range set.FindAllStringSubmatch(loop, -1) {
		name := strings.ToLower(m[1] + m[2])
		if !removed[name] && !kept[name] {
			t.Errorf("the bootstrap sets $%s for a request and does not remove it afterwards", name)
		}
	}
	if len(set.FindAllString(loop, -1)) < 5 {
		t.Fatal("found too few assignments in the bootstrap's loop: the pattern no longer matches it")
	}
	answer := strings.LastIndex(loop, "$stdout.WriteLine(")
	clearing := strings.LastIndex(loop, "Remove-Variable -Name "+WorkerRequestVariables+" -ErrorAction SilentlyContinue; $Error.Clear() }")
	if answer < 0 || clearing < answer || !strings.HasSuffix(loop, "$Error.Clear() }") {
		t.Fatal("the bootstrap does not remove the request's variables and clear $Error after each answer, inside its loop")
	}
}
