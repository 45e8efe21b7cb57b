package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// document is one Kubernetes object read from a manifest.
type document struct {
	source string // "file: document N" or "file: document N, item M"
	raw    []byte // JSON
	meta   objectHeader
	// skip says why a document that is YAML but no Kubernetes object is
	// not reviewed; empty for an object.
	skip string
}

type objectHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

// badInput is bad input: the CLI exits 2 with its message.
func badInput(format string, args ...any) error {
	return inputFailure(fmt.Errorf(format, args...))
}

// readOptions say how readManifests treats directories.
type readOptions struct {
	// recursive reads the manifests in the subdirectories of a directory
	// too, as kubectl -R does.
	recursive bool
	// kustomize builds a directory that holds a kustomization file with
	// kustomize, and takes what it builds, instead of reading its files.
	kustomize bool
	// unreadHint ends the warning about subdirectories that hold
	// manifests but were not read: what would read them.
	unreadHint string
	// policies says the files are read as --policy: .rego files in a
	// directory are named, with where rego goes, never passed over.
	policies bool
}

// regoNotPolicy says where the rego of a .rego file goes instead.
const regoNotPolicy = "policies are PipeAccessPolicy objects, and rego rules go into a PipeAccessPolicy's spec.rego: docs/writing-policies.md, section \"Adding a rule\", shows how"

// readManifests reads objects from files, directories (their .yaml, .yml
// and .json files; see readOptions) or "-" for stdin. Multi-document YAML,
// JSON and `kind: List` are accepted. A key given twice in one mapping takes
// its last value, as kubectl and the API server read it, and warn is told
// where; warn is also told about subdirectories that were not read.
func readManifests(paths []string, stdin io.Reader, warn func(string), opts readOptions) ([]document, error) {
	var docs []document
	for _, p := range paths {
		if opts.kustomize && p != "-" {
			if k := kustomizationIn(p); k != "" {
				more, err := kustomizeDocuments(p, warn)
				if err != nil {
					return nil, err
				}
				docs = append(docs, more...)
				continue
			}
		}
		files, err := expand(p, opts, warn)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			var data []byte
			if f == "-" {
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(f)
			}
			if err != nil {
				return nil, badInput("cannot read %s: %v", displayName(f), err)
			}
			more, err := splitDocuments(displayName(f), data, warn)
			if err != nil {
				return nil, err
			}
			docs = append(docs, more...)
		}
	}
	return docs, nil
}

func displayName(f string) string {
	if f == "-" {
		return "<stdin>"
	}
	return f
}

// isManifestFile reports whether a directory entry named name is read as
// a manifest.
func isManifestFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// expand lists the files p names: p itself, or the manifest files of the
// directory p (and of its subdirectories, with opts.recursive).
func expand(p string, opts readOptions, warn func(string)) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, badInput("cannot read %s: %v", p, err)
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	if opts.recursive {
		return expandRecursive(p, warn)
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, badInput("cannot read directory %s: %v", p, err)
	}
	var files, unread, rego []string
	for _, e := range entries {
		full := filepath.Join(p, e.Name())
		if e.IsDir() {
			if holdsManifests(full) {
				unread = append(unread, full)
			}
			continue
		}
		if isManifestFile(e.Name()) {
			files = append(files, full)
		}
		if opts.policies && strings.EqualFold(filepath.Ext(e.Name()), ".rego") {
			rego = append(rego, full)
		}
	}
	sort.Strings(files)
	if len(rego) > 0 {
		if len(files) == 0 {
			return nil, badInput("directory %s holds .rego files (%s) but no .yaml, .yml or .json files; %s", p, nameSome(rego), regoNotPolicy)
		}
		warn(fmt.Sprintf("%s not read: %s", nameSome(rego), regoNotPolicy))
	}
	if len(files) == 0 {
		if len(unread) > 0 {
			return nil, badInput("directory %s holds no .yaml, .yml or .json files; %s %s %s: %s", p, byCount(len(unread), "its subdirectory", "its subdirectories"), nameSome(unread), byCount(len(unread), "does", "do"), opts.unreadHint)
		}
		return nil, badInput("directory %s holds no .yaml, .yml or .json files", p)
	}
	if len(unread) > 0 {
		warn(fmt.Sprintf("%s %s of %s %s manifests that were not read: %s", byCount(len(unread), "subdirectory", "subdirectories"), nameSome(unread), p, byCount(len(unread), "holds", "hold"), opts.unreadHint))
	}
	return files, nil
}

// expandRecursive lists the manifest files under the directory p, in
// lexical order. Symbolic links to directories are not followed, as
// kubectl -R does not follow them; warn names them.
func expandRecursive(p string, warn func(string)) ([]string, error) {
	var files []string
	err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if info, err := os.Stat(path); err == nil && info.IsDir() {
				warn(fmt.Sprintf("%s: a symbolic link to a directory is not followed; give its target with -f", path))
				return nil
			}
		}
		if isManifestFile(d.Name()) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, badInput("cannot read directory %s: %v", p, err)
	}
	if len(files) == 0 {
		return nil, badInput("directory %s and its subdirectories hold no .yaml, .yml or .json files", p)
	}
	return files, nil
}

// holdsManifests reports whether the directory dir or one below it holds
// a manifest file, or cannot be read (so that it may).
func holdsManifests(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || (!d.IsDir() && isManifestFile(d.Name())) {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// nameSome names the first few of items, and how many more there are.
func nameSome(items []string) string {
	const most = 5
	if len(items) <= most {
		return joinLast(items, " and ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:most], ", "), len(items)-most)
}

// byCount is one when n is 1, else many.
func byCount(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func splitDocuments(name string, data []byte, warn func(string)) ([]document, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []document
	for n := 1; ; n++ {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badInput("%s: document %d: cannot read YAML: %v", name, n, err)
		}
		if len(bytes.TrimSpace(stripComments(chunk))) == 0 {
			continue
		}
		where := fmt.Sprintf("%s: document %d", name, n)
		raw, strictErr := yaml.YAMLToJSONStrict(chunk)
		if strictErr != nil {
			var err error
			if raw, err = yaml.YAMLToJSON(chunk); err != nil {
				return nil, badInput("%s: invalid YAML or JSON: %v", where, err)
			}
			for _, w := range duplicateKeys(strictErr) {
				warn(fmt.Sprintf("%s: %s; the last value is used, as kubectl and the API server do", where, w))
			}
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		more, err := objects(where, raw)
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
	return docs, nil
}

// objects turns one document into objects, expanding lists.
func objects(where string, raw []byte) ([]document, error) {
	// YAML that is no Kubernetes object at all (a values file, a list of
	// strings) is not reviewed, and says so. A mapping with one of
	// apiVersion and kind is an object with a mistake, which is bad input.
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] != '{' {
		return []document{{source: where, raw: raw, skip: "not a Kubernetes object: a YAML " + shape(trimmed[0]) + ", not a mapping with apiVersion and kind"}}, nil
	}
	var h objectHeader
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, badInput("%s: not a Kubernetes object: %v", where, err)
	}
	if h.Kind == "" && h.APIVersion == "" {
		return []document{{source: where, raw: raw, skip: "not a Kubernetes object: it has no apiVersion and kind"}}, nil
	}
	if h.Kind == "" || h.APIVersion == "" {
		return nil, badInput("%s: not a Kubernetes object: apiVersion and kind are required", where)
	}
	if !strings.HasSuffix(h.Kind, "List") {
		return []document{{source: where, raw: raw, meta: h}}, nil
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badInput("%s: %s items: %v", where, h.Kind, err)
	}
	var out []document
	for i, item := range list.Items {
		more, err := objects(fmt.Sprintf("%s, item %d", where, i+1), item)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// shape names the JSON value that starts with c.
func shape(c byte) string {
	switch c {
	case '[':
		return "sequence"
	case '"':
		return "string"
	}
	return "scalar"
}

func stripComments(chunk []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(chunk, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		out = append(out, line)
	}
	return bytes.Join(out, []byte("\n"))
}

var duplicateKey = regexp.MustCompile(`line (\d+): key (".*") already set in map`)

// duplicateKeys describes, one by one, the keys a strict YAML read found
// more than once. The lenient read succeeded, so nothing else differs.
func duplicateKeys(strictErr error) []string {
	matches := duplicateKey.FindAllStringSubmatch(strictErr.Error(), -1)
	if len(matches) == 0 {
		return []string{strictErr.Error()}
	}
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		out = append(out, fmt.Sprintf("line %s: key %s is given more than once", m[1], m[2]))
	}
	return out
}
