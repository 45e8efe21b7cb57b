package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// falcoFields are the JSON pointers of the k8saudit plugin's fields that
// the documentation's Falco rule uses, as the plugin defines them.
var falcoFields = map[string]string{
	"ka.auditid":         "/auditID",
	"ka.stage":           "/stage",
	"ka.auth.decision":   "/annotations/authorization.k8s.io~1decision",
	"ka.auth.reason":     "/annotations/authorization.k8s.io~1reason",
	"ka.user.name":       "/user/username",
	"ka.verb":            "/verb",
	"ka.uri":             "/requestURI",
	"ka.target.resource": "/objectRef/resource",
	"ka.target.name":     "/objectRef/name",
	"ka.response.code":   "/responseStatus/code",
}

// pointer resolves a JSON pointer (RFC 6901) in v.
func pointer(v any, p string) (any, error) {
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = n[tok]; !ok {
				return nil, fmt.Errorf("no %q", tok)
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil, fmt.Errorf("no element %q", tok)
			}
			v = n[i]
		default:
			return nil, fmt.Errorf("%q inside a %T", tok, v)
		}
	}
	return v, nil
}

// lokiPath turns a Loki json parser expression (a.b["c/d"][0]) into a
// JSON pointer.
func lokiPath(expr string) (string, error) {
	var p strings.Builder
	for expr != "" {
		switch {
		case strings.HasPrefix(expr, `["`):
			end := strings.Index(expr, `"]`)
			if end < 0 {
				return "", fmt.Errorf("unclosed [ in %q", expr)
			}
			p.WriteString("/" + strings.ReplaceAll(expr[2:end], "/", "~1"))
			expr = expr[end+2:]
		case strings.HasPrefix(expr, "["):
			end := strings.IndexByte(expr, ']')
			if end < 0 {
				return "", fmt.Errorf("unclosed [ in %q", expr)
			}
			p.WriteString("/" + expr[1:end])
			expr = expr[end+1:]
		default:
			expr = strings.TrimPrefix(expr, ".")
			end := strings.IndexAny(expr, ".[")
			if end < 0 {
				end = len(expr)
			}
			p.WriteString("/" + expr[:end])
			expr = expr[end:]
		}
	}
	return p.String(), nil
}

// TestDocsQueriesNameRecordFields checks the Falco rule and the LogQL
// query of docs/audit.md against a forbidden call's record as the agent
// writes it, from a caller resolved to its pod: every field they read is
// in the record, and the values they compare with are the record's, so
// the rule fires and the query counts it.
func TestDocsQueriesNameRecordFields(t *testing.T) {
	lookup := &pods{}
	const podUID = "5f0b8e4a-0000-0000-0000-000000000002"
	lookup.set(podUID, identity.PodInfo{UID: podUID, Name: "web-1", Namespace: "shop", ServiceAccount: "web"})
	g, path := newPodGuard(t, lookup)
	caller := &identity.Caller{Source: identity.SourcePeer, PID: 4242, UID: 1000, GID: 2000, PodUID: podUID, PodMapped: true}
	ok := func(context.Context, any) (any, error) { return &fsv1.PathExistsResponse{}, nil }
	if _, err := g.Unary(callContext(caller, metadata.MD{}), &fsv1.PathExistsRequest{Path: "/etc/x"}, &grpc.UnaryServerInfo{FullMethod: "/v1.Filesystem/PathExists"}, ok); err == nil {
		t.Fatal("the call outside the roots was allowed")
	}
	if err := g.o.Audit.Close(); err != nil {
		t.Fatal(err)
	}
	var record any
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"pipeguard.io/record":"request"`) {
			if err := json.Unmarshal([]byte(line), &record); err != nil {
				t.Fatal(err)
			}
		}
	}
	if record == nil {
		t.Fatal("no request record")
	}
	resolve := func(where, p string) any {
		t.Helper()
		v, err := pointer(record, p)
		if err != nil {
			t.Errorf("%s reads %s, which the record does not have (%v)", where, p, err)
		}
		return v
	}

	doc, err := os.ReadFile("../../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start, end := strings.Index(text, "### Authorization annotations"), strings.Index(text, "### Record bounds")
	if start < 0 || end < start {
		t.Fatal("docs/audit.md has no Authorization annotations section before Record bounds")
	}
	section := text[start:end]

	// Falco: every ka.* field and jevt.value pointer, and the condition's
	// comparisons.
	rule := regexp.MustCompile("(?s)```yaml\n(- rule: pipeguard-agent call forbidden.*?)```").FindStringSubmatch(section)
	if rule == nil {
		t.Fatal("no Falco rule in the section")
	}
	falco := rule[1]
	field := func(ref string) string {
		if strings.HasPrefix(ref, "jevt.value[") {
			return strings.TrimSuffix(strings.TrimPrefix(ref, "jevt.value["), "]")
		}
		p, ok := falcoFields[ref]
		if !ok {
			t.Errorf("the Falco rule uses %s, whose JSON pointer this test does not know", ref)
		}
		return p
	}
	refs := regexp.MustCompile(`jevt\.value\[[^\]]+\]|\bka\.[a-z_.]*[a-z]`).FindAllString(falco, -1)
	if len(refs) < 8 {
		t.Fatalf("found %d fields in the Falco rule: %q", len(refs), refs)
	}
	for _, ref := range refs {
		if p := field(ref); p != "" {
			resolve("the Falco rule's "+ref, p)
		}
	}
	conds := regexp.MustCompile(`(jevt\.value\[[^\]]+\]|ka\.[a-z_.]*[a-z])\s*=\s*"([^"]*)"`).FindAllStringSubmatch(falco, -1)
	if len(conds) != 2 {
		t.Fatalf("the Falco rule's condition compares %d fields, want 2: %q", len(conds), conds)
	}
	for _, c := range conds {
		if v := resolve("the Falco condition "+c[1], field(c[1])); v != c[2] {
			t.Errorf("the Falco condition wants %s = %q; the forbidden call's record has %v", c[1], c[2], v)
		}
	}

	// LogQL: every json parser expression, and the label filter.
	labels := map[string]string{}
	for _, m := range regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(section, -1) {
		expr, err := strconv.Unquote(`"` + m[2] + `"`)
		if err != nil || !regexp.MustCompile(`^(annotations|requestURI|user|verb|objectRef|stage|responseStatus)\b`).MatchString(expr) {
			continue // a stream selector, not a json expression
		}
		p, err := lokiPath(expr)
		if err != nil {
			t.Fatal(err)
		}
		resolve("the LogQL json expression "+m[1]+"="+expr, p)
		labels[m[1]] = p
	}
	for _, l := range []string{"decision", "method", "caller", "rule"} {
		if labels[l] == "" {
			t.Errorf("the LogQL example extracts no %s label; it extracts %v", l, labels)
		}
	}
	filters := regexp.MustCompile(`\| (\w+) = "([^"]*)"`).FindAllStringSubmatch(section, -1)
	if len(filters) != 1 {
		t.Fatalf("the LogQL query has %d label filters, want 1: %q", len(filters), filters)
	}
	if l, want := filters[0][1], filters[0][2]; labels[l] == "" || resolve("the LogQL filter on "+l, labels[l]) != want {
		t.Errorf("the LogQL query keeps %s = %q, which the forbidden call's record does not have", l, want)
	}
	if got := resolve("the record", "/annotations/authorization.k8s.io~1decision"); got != audit.AuthorizationForbid {
		t.Errorf("the forbidden call's record has decision %v", got)
	}
}
