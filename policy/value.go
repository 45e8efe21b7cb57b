package policy

import (
	"sort"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/pipeguard/pipeguard/internal/kinds"
)

// The rego input is built as an ast.Value directly: converting Go structs
// through JSON costs more than evaluating the rules. Field names here must
// match the json tags in input.go; TestInputValueMatchesJSON checks that.

var inputVersion = ast.StringTerm(InputVersion)

// key holds the object keys of the input document, allocated once.
var key = struct {
	allow              *ast.Term
	ambiguousReason    *ast.Term
	apiVersion         *ast.Term
	builtin            *ast.Term
	container          *ast.Term
	containerKind      *ast.Term
	dryRun             *ast.Term
	enforcementAction  *ast.Term
	group              *ast.Term
	groups             *ast.Term
	hostProcess        *ast.Term
	image              *ast.Term
	key                *ast.Term
	kind               *ast.Term
	labels             *ast.Term
	matchExpressions   *ast.Term
	matchLabels        *ast.Term
	mounts             *ast.Term
	name               *ast.Term
	namespace          *ast.Term
	namespaceMatch     *ast.Term
	namespaceSelector  *ast.Term
	namespaces         *ast.Term
	object             *ast.Term
	operation          *ast.Term
	operator           *ast.Term
	path               *ast.Term
	pathClass          *ast.Term
	pipe               *ast.Term
	pipes              *ast.Term
	pod                *ast.Term
	policies           *ast.Term
	privileged         *ast.Term
	protectedBy        *ast.Term
	rawPath            *ast.Term
	readOnly           *ast.Term
	request            *ast.Term
	resource           *ast.Term
	serviceAccountName *ast.Term
	serviceAccounts    *ast.Term
	subResource        *ast.Term
	uid                *ast.Term
	username           *ast.Term
	values             *ast.Term
	version            *ast.Term
	volume             *ast.Term
	volumeSource       *ast.Term
}{
	allow:              ast.StringTerm("allow"),
	ambiguousReason:    ast.StringTerm("ambiguousReason"),
	apiVersion:         ast.StringTerm("apiVersion"),
	builtin:            ast.StringTerm("builtin"),
	container:          ast.StringTerm("container"),
	containerKind:      ast.StringTerm("containerKind"),
	dryRun:             ast.StringTerm("dryRun"),
	enforcementAction:  ast.StringTerm("enforcementAction"),
	group:              ast.StringTerm("group"),
	groups:             ast.StringTerm("groups"),
	hostProcess:        ast.StringTerm("hostProcess"),
	image:              ast.StringTerm("image"),
	key:                ast.StringTerm("key"),
	kind:               ast.StringTerm("kind"),
	labels:             ast.StringTerm("labels"),
	matchExpressions:   ast.StringTerm("matchExpressions"),
	matchLabels:        ast.StringTerm("matchLabels"),
	mounts:             ast.StringTerm("mounts"),
	name:               ast.StringTerm("name"),
	namespace:          ast.StringTerm("namespace"),
	namespaceMatch:     ast.StringTerm("namespaceMatch"),
	namespaceSelector:  ast.StringTerm("namespaceSelector"),
	namespaces:         ast.StringTerm("namespaces"),
	object:             ast.StringTerm("object"),
	operation:          ast.StringTerm("operation"),
	operator:           ast.StringTerm("operator"),
	path:               ast.StringTerm("path"),
	pathClass:          ast.StringTerm("pathClass"),
	pipe:               ast.StringTerm("pipe"),
	pipes:              ast.StringTerm("pipes"),
	pod:                ast.StringTerm("pod"),
	policies:           ast.StringTerm("policies"),
	privileged:         ast.StringTerm("privileged"),
	protectedBy:        ast.StringTerm("protectedBy"),
	rawPath:            ast.StringTerm("rawPath"),
	readOnly:           ast.StringTerm("readOnly"),
	request:            ast.StringTerm("request"),
	resource:           ast.StringTerm("resource"),
	serviceAccountName: ast.StringTerm("serviceAccountName"),
	serviceAccounts:    ast.StringTerm("serviceAccounts"),
	subResource:        ast.StringTerm("subResource"),
	uid:                ast.StringTerm("uid"),
	username:           ast.StringTerm("username"),
	values:             ast.StringTerm("values"),
	version:            ast.StringTerm("version"),
	volume:             ast.StringTerm("volume"),
	volumeSource:       ast.StringTerm("volumeSource"),
}

// internedStrings holds the few strings most inputs repeat as terms, so
// building an input does not allocate them again. The table is the
// package's own and built on first use.
var internedStrings = sync.OnceValue(func() map[string]*ast.Term {
	ss := []string{
		"", KindContainer, KindInitContainer, KindEphemeralContainer, KindPersistentVolume,
		"hostPath", "local", "pipe", "ambiguous", "default",
		"CREATE", "UPDATE", "DELETE", "CONNECT",
		"ephemeralcontainers", "kube-system",
	}
	for _, k := range kinds.All() { // what the request of each reviewed kind names
		ss = append(ss, k.GVK.Kind, k.Resource, k.GVK.Group, k.GVK.Version, k.GVK.GroupVersion().String())
	}
	m := make(map[string]*ast.Term, len(ss))
	for _, s := range ss {
		m[s] = ast.StringTerm(s)
	}
	return m
})

// internedString returns s as a term, shared when s is one of
// internedStrings or a string OPA interns itself, and new otherwise.
func internedString(s string) *ast.Term {
	if t, ok := internedStrings()[s]; ok {
		return t
	}
	return ast.InternedTerm(s)
}

// value renders the whole input document, as admin-written rules may read
// any part of it. protectedBy holds the protectedBy fact of each mount; nil
// takes it from the mounts.
func (in *Input) value(policies, protectedBy []*ast.Term) ast.Value {
	items := []*ast.Term{
		key.version, inputVersion,
		key.request, in.Request.term(),
		key.namespace, in.Namespace.term(),
		key.object, in.Object.term(),
		key.pod, in.Pod.term(),
		key.mounts, mountsTerm(in.Mounts, protectedBy),
		key.policies, ast.ArrayTerm(policies...),
	}
	return object(items...)
}

// shippedValue renders only what the shipped rules read, which are the
// facts their decisions are remembered by; they are evaluated apart from
// admin-written rules. The namespace, if there is one, is called nsName.
func (in *Input) shippedValue(nsName string, policies, protectedBy []*ast.Term) ast.Value {
	var ns, pod *ast.Term = ast.NullTerm(), ast.NullTerm()
	if in.Namespace != nil {
		ns = ast.NewTerm(object(key.name, ast.StringTerm(nsName)))
	}
	if in.Pod != nil {
		pod = ast.NewTerm(object(
			key.serviceAccountName, ast.StringTerm(in.Pod.ServiceAccountName),
			key.hostProcess, ast.InternedTerm(in.Pod.HostProcess),
		))
	}
	return object(
		key.version, inputVersion,
		key.namespace, ns,
		key.pod, pod,
		key.mounts, mountsTerm(in.Mounts, protectedBy),
		key.policies, ast.ArrayTerm(policies...),
	)
}

func (r *Request) term() *ast.Term {
	return ast.NewTerm(object(
		key.uid, ast.StringTerm(r.UID),
		key.operation, internedString(r.Operation),
		key.kind, internedString(r.Kind),
		key.group, internedString(r.Group),
		key.version, internedString(r.Version),
		key.resource, internedString(r.Resource),
		key.subResource, internedString(r.SubResource),
		key.namespace, ast.StringTerm(r.Namespace),
		key.name, ast.StringTerm(r.Name),
		key.username, ast.StringTerm(r.Username),
		key.groups, stringsTerm(r.Groups),
		key.dryRun, ast.InternedTerm(r.DryRun),
	))
}

func (n *Namespace) term() *ast.Term {
	if n == nil {
		return ast.NullTerm()
	}
	return ast.NewTerm(object(
		key.name, ast.StringTerm(n.Name),
		key.labels, stringMapTerm(n.Labels),
	))
}

func (o *Object) term() *ast.Term {
	return ast.NewTerm(object(
		key.apiVersion, internedString(o.APIVersion),
		key.kind, internedString(o.Kind),
		key.namespace, ast.StringTerm(o.Namespace),
		key.name, ast.StringTerm(o.Name),
	))
}

func (p *Pod) term() *ast.Term {
	if p == nil {
		return ast.NullTerm()
	}
	return ast.NewTerm(object(
		key.serviceAccountName, ast.StringTerm(p.ServiceAccountName),
		key.hostProcess, ast.InternedTerm(p.HostProcess),
	))
}

func mountsTerm(ms []Mount, protectedBy []*ast.Term) *ast.Term {
	terms := make([]*ast.Term, len(ms))
	for i := range ms {
		m := &ms[i]
		var protected *ast.Term
		if protectedBy != nil {
			protected = protectedBy[i]
		} else {
			protected = stringsTerm(m.ProtectedBy)
		}
		kv := []*ast.Term{
			key.container, ast.StringTerm(m.Container),
			key.containerKind, internedString(m.ContainerKind),
			key.volume, ast.StringTerm(m.Volume),
			key.volumeSource, internedString(m.VolumeSource),
			key.rawPath, ast.StringTerm(m.RawPath),
			key.path, ast.StringTerm(m.Path),
			key.pathClass, internedString(m.PathClass),
			key.pipe, ast.StringTerm(m.Pipe),
			key.ambiguousReason, internedString(m.AmbiguousReason),
			key.readOnly, ast.InternedTerm(m.ReadOnly),
			key.privileged, ast.InternedTerm(m.Privileged),
			key.hostProcess, ast.InternedTerm(m.HostProcess),
			key.protectedBy, protected,
		}
		// Like the JSON form, only a HostProcess container's fact has
		// an image.
		if m.Image != "" {
			kv = append(kv, key.image, ast.StringTerm(m.Image))
		}
		terms[i] = ast.NewTerm(object(kv...))
	}
	return ast.ArrayTerm(terms...)
}

// term renders a policy's facts; it runs once per generation for each value
// of NamespaceMatch, not per request.
func (p *PolicyFacts) term() *ast.Term {
	var selector *ast.Term
	if s := p.Allow.NamespaceSelector; s == nil {
		selector = ast.NullTerm()
	} else {
		exprs := make([]*ast.Term, len(s.MatchExpressions))
		for i, r := range s.MatchExpressions {
			exprs[i] = ast.NewTerm(object(
				key.key, ast.StringTerm(r.Key),
				key.operator, ast.StringTerm(r.Operator),
				key.values, stringsTerm(r.Values),
			))
		}
		selector = ast.NewTerm(object(
			key.matchLabels, stringMapTerm(s.MatchLabels),
			key.matchExpressions, ast.ArrayTerm(exprs...),
		))
	}
	return ast.NewTerm(object(
		key.name, ast.StringTerm(p.Name),
		key.pipes, stringsTerm(p.Pipes),
		key.enforcementAction, ast.StringTerm(p.EnforcementAction),
		key.allow, ast.NewTerm(object(
			key.privileged, ast.InternedTerm(p.Allow.Privileged),
			key.hostProcess, ast.InternedTerm(p.Allow.HostProcess),
			key.namespaces, stringsTerm(p.Allow.Namespaces),
			key.namespaceSelector, selector,
			key.serviceAccounts, stringsTerm(p.Allow.ServiceAccounts),
		)),
		key.builtin, ast.InternedTerm(p.Builtin),
		key.namespaceMatch, ast.InternedTerm(p.NamespaceMatch),
	))
}

func object(kv ...*ast.Term) ast.Object {
	items := make([][2]*ast.Term, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		items = append(items, [2]*ast.Term{kv[i], kv[i+1]})
	}
	return ast.NewObject(items...)
}

func stringsTerm(ss []string) *ast.Term {
	terms := make([]*ast.Term, len(ss))
	for i, s := range ss {
		terms[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(terms...)
}

func stringMapTerm(m map[string]string) *ast.Term {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	items := make([][2]*ast.Term, len(keys))
	for i, k := range keys {
		items[i] = [2]*ast.Term{ast.StringTerm(k), ast.StringTerm(m[k])}
	}
	return ast.ObjectTerm(items...)
}
