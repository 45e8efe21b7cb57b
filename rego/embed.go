// Package rego ships pipeguard's rego rules, embedded into every binary so
// that the webhook, the agent and the CLI decide with the same text that
// `opa test rego/` checks.
package rego

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.rego
var files embed.FS

// File is one embedded rego module.
type File struct {
	Name   string // file name, used as the module name in compile errors
	Source string
}

// Admission returns the admission rules (package pipeguard.admission),
// without their tests.
func Admission() []File { return load("admission") }

// Agent returns the agent gate rules (package pipeguard.agent), without
// their tests.
func Agent() []File { return load("agent") }

// FS exposes every embedded file, rules and tests, for `pipeguard policy
// test`.
func FS() fs.FS { return files }

func load(stem string) []File {
	entries, err := fs.Glob(files, stem+"*.rego")
	if err != nil {
		return nil
	}
	var out []File
	for _, name := range entries {
		if !strings.HasSuffix(stem, "_test") && strings.HasSuffix(name, "_test.rego") {
			continue
		}
		b, err := files.ReadFile(name)
		if err != nil {
			continue
		}
		out = append(out, File{Name: name, Source: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
