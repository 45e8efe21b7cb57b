package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A PolicyTestSuite names manifests, namespace labels and policies, and
// the decision admission must reach on each object; `pipeguard policy test`
// runs it. docs/cli.md describes the format.
const (
	suiteKind       = "PolicyTestSuite"
	suiteAPIVersion = "pipeguard.io/v1alpha1"
)

// suite is one PolicyTestSuite document.
type suite struct {
	APIVersion string      `yaml:"apiVersion"`
	Kind       string      `yaml:"kind"`
	Metadata   suiteMeta   `yaml:"metadata"`
	Tests      []suiteTest `yaml:"tests"`

	file string // the file it was read from
	line int    // where it starts
}

type suiteMeta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// suiteTest is one set of policies, namespace labels and manifests, with
// the decisions expected on its objects.
type suiteTest struct {
	Name            string                       `yaml:"name"`
	Namespace       string                       `yaml:"namespace"`
	NamespaceLabels map[string]map[string]string `yaml:"namespaceLabels"`
	Policies        []suiteSource                `yaml:"policies"`
	Manifests       []suiteSource                `yaml:"manifests"`
	Expect          []expectation                `yaml:"expect"`

	line int
}

// suiteSource is a file (relative to the suite's file) or objects inline.
type suiteSource struct {
	File   string    `yaml:"file"`
	Inline yaml.Node `yaml:"inline"`

	line int
}

// expectation is one case: the decision expected on one object.
type expectation struct {
	Kind      string `yaml:"kind"`
	Namespace string `yaml:"namespace"`
	Name      string `yaml:"name"`
	Decision  string `yaml:"decision"`
	Message   string `yaml:"message"`

	line int
	re   *regexp.Regexp
}

// expectedDecisions are the values of expect[].decision: the decisions of
// -o json. allow also holds for a dryrun, which admission admits too;
// dryrun holds for a dryrun alone.
var expectedDecisions = []string{"allow", "warn", "dryrun", "deny", "skip"}

// suiteRe finds PolicyTestSuite documents among the YAML files of a
// directory, parsed or not, so that a broken suite is reported rather than
// passed over.
var suiteRe = regexp.MustCompile(`(?m)^kind:[ \t]*["']?` + suiteKind + `["']?[ \t]*(#.*)?$`)

// isSuite reports whether the YAML data holds a PolicyTestSuite.
func isSuite(data []byte) bool { return suiteRe.Match(data) }

// readSuites reads every PolicyTestSuite document of a file. Everything
// wrong with it is an error naming file:line.
func readSuites(file string) ([]*suite, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, badInput("cannot read %s: %v", file, err)
	}
	typed := yaml.NewDecoder(bytes.NewReader(data))
	typed.KnownFields(true)
	nodes := yaml.NewDecoder(bytes.NewReader(data))
	var out []*suite
	for {
		var root yaml.Node
		if err := nodes.Decode(&root); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, suiteYAMLError(file, err)
		}
		s := &suite{file: file}
		if err := typed.Decode(s); err != nil {
			return nil, suiteYAMLError(file, err)
		}
		if len(root.Content) == 0 || root.Content[0].Kind == yaml.ScalarNode && root.Content[0].Tag == "!!null" {
			continue // an empty document
		}
		s.line = root.Content[0].Line
		if err := s.validate(root.Content[0]); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, badInput("%s: no %s in the file", file, suiteKind)
	}
	return out, nil
}

// validate checks what the YAML decoder cannot, and takes the line of each
// test, source and expectation from n, the suite's mapping.
func (s *suite) validate(n *yaml.Node) error {
	if s.APIVersion != suiteAPIVersion || s.Kind != suiteKind {
		return badInput("%s:%d: apiVersion %q, kind %q: want apiVersion %s, kind %s", s.file, s.line, s.APIVersion, s.Kind, suiteAPIVersion, suiteKind)
	}
	if len(s.Tests) == 0 {
		return badInput("%s:%d: %s %q has no tests; list them under tests:", s.file, s.line, suiteKind, s.Metadata.Name)
	}
	tests := mappingValue(n, "tests")
	seen := map[string]int{}
	for i := range s.Tests {
		t := &s.Tests[i]
		tn := tests.Content[i]
		t.line = tn.Line
		where := fmt.Sprintf("%s:%d", s.file, t.line)
		if t.Name == "" {
			return badInput("%s: the test has no name; give each test a name: to tell the results apart", where)
		}
		if first, ok := seen[t.Name]; ok {
			return badInput("%s: test %q is named twice (first at line %d); give each test its own name", where, t.Name, first)
		}
		seen[t.Name] = t.line
		if err := sourceLines(s.file, t, "policies", t.Policies, mappingValue(tn, "policies")); err != nil {
			return err
		}
		if len(t.Manifests) == 0 {
			return badInput("%s: test %q has no manifests; list the objects to evaluate under manifests:", where, t.Name)
		}
		if err := sourceLines(s.file, t, "manifests", t.Manifests, mappingValue(tn, "manifests")); err != nil {
			return err
		}
		if len(t.Expect) == 0 {
			return badInput("%s: test %q expects nothing; list the decision expected on each object under expect:", where, t.Name)
		}
		expect := mappingValue(tn, "expect")
		for j := range t.Expect {
			e := &t.Expect[j]
			e.line = expect.Content[j].Line
			if err := e.validate(fmt.Sprintf("%s:%d", s.file, e.line)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sourceLines takes the lines of a test's policies or manifests from their
// node, and checks each names a file or objects inline, not both.
func sourceLines(file string, t *suiteTest, field string, sources []suiteSource, n *yaml.Node) error {
	for i := range sources {
		src := &sources[i]
		src.line = n.Content[i].Line
		hasInline := src.Inline.Kind != 0
		if (src.File == "") == !hasInline {
			return badInput("%s:%d: test %q: each entry of %s takes either file: (a path relative to the suite) or inline: (the objects), not both or neither", file, src.line, t.Name, field)
		}
	}
	return nil
}

func (e *expectation) validate(where string) error {
	if e.Kind == "" || e.Name == "" {
		return badInput("%s: an expectation names its object by kind and name (and namespace, for a namespaced object)", where)
	}
	e.Decision = strings.ToLower(e.Decision)
	if !slices.Contains(expectedDecisions, e.Decision) {
		return badInput("%s: decision %q: want %s", where, e.Decision, orList(expectedDecisions))
	}
	if e.Message != "" {
		re, err := regexp.Compile(e.Message)
		if err != nil {
			return badInput("%s: message %q is not a regular expression: %v", where, e.Message, err)
		}
		e.re = re
	}
	return nil
}

// mappingValue is the value of key in mapping n; an empty node if absent.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	}
	return &yaml.Node{}
}

// Go type names in the YAML decoder's messages, and what a suite's author
// calls them.
var suiteTypes = map[string]reflect.Type{
	"a PolicyTestSuite":             reflect.TypeFor[suite](),
	"metadata":                      reflect.TypeFor[suiteMeta](),
	"a test":                        reflect.TypeFor[suiteTest](),
	"a policies or manifests entry": reflect.TypeFor[suiteSource](),
	"an expect entry":               reflect.TypeFor[expectation](),
}

var (
	yamlLine     = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
)

// suiteYAMLError turns the YAML decoder's errors into file:line messages
// in the suite's words.
func suiteYAMLError(file string, err error) error {
	var lines []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines = te.Errors
	} else {
		lines = []string{err.Error()}
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		where, msg := file, l
		if m := yamlLine.FindStringSubmatch(l); m != nil {
			where, msg = file+":"+m[1], m[2]
		}
		if m := unknownField.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("unknown field %q", m[1])
			for what, t := range suiteTypes {
				if t.String() == m[2] {
					msg += fmt.Sprintf(" in %s; its fields are %s", what, orList(yamlFields(t)))
				}
			}
		} else {
			for what, t := range suiteTypes {
				msg = strings.ReplaceAll(msg, t.String(), what)
			}
		}
		out = append(out, where+": "+msg)
	}
	return badInput("%s", strings.Join(out, "\n"))
}

// yamlFields lists the YAML field names of a struct type.
func yamlFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
