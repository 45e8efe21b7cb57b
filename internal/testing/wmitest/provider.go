// Package wmitest is an in-memory WMI provider for tests: classes with
// instances, associations and methods whose in- and out-parameters are
// checked against the signatures Microsoft documents. Provider is a
// wmi.Conn, so the groups' WMI operations run against it on any OS; its
// strict WQL parser fails a query a value was spliced into unescaped.
package wmitest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// Param is a documented method parameter: its name and the Go type of its
// value as a wmi.Conn carries it (e.g. uint16(0), "", []string(nil)).
type Param struct {
	Name string
	Type any
}

// Method is a class's method, with its documented signature.
type Method struct {
	// Static is a method of the class (called on the class's path), not
	// of an instance.
	Static bool
	// In are its in-parameters; a call with another name or type fails
	// with WBEM_E_INVALID_PARAMETER, as WMI fails it.
	In []Param
	// Out are its out-parameters besides ReturnValue; Run may return
	// only these.
	Out []Param
	// Run does the method on self (nil for a static method), the
	// instance's properties, which it may change, with the provider's
	// lock held. It returns the method's ReturnValue and out-parameters.
	Run func(p *Provider, self *Instance, in map[string]any) (code uint32, out map[string]any)
}

// Instance is an instance of a class.
type Instance struct {
	Class string
	Props map[string]any
}

// Class is a class of the provider.
type Class struct {
	Namespace string
	Name      string
	// Key is the key property, which names an instance in its path:
	// Class.Key="value".
	Key     string
	Methods map[string]Method
}

// Call is one method call the provider was asked to run.
type Call struct {
	Namespace, Path, Method string
	In                      map[string]any
}

// Provider is an in-memory WMI provider; it implements wmi.Conn.
type Provider struct {
	mu        sync.Mutex
	classes   map[string]*Class // by namespace and name
	instances map[string][]*Instance
	assoc     map[string][][2]*Instance // by association class
	calls     []Call
	queries   []string
	holds     map[string]chan struct{} // by Class.Method
}

// New returns an empty provider.
func New() *Provider {
	return &Provider{classes: map[string]*Class{}, instances: map[string][]*Instance{}, assoc: map[string][][2]*Instance{}, holds: map[string]chan struct{}{}}
}

var _ wmi.Conn = (*Provider)(nil)

func classKey(ns, name string) string { return strings.ToLower(ns) + "|" + strings.ToLower(name) }

// AddClass registers c.
func (p *Provider) AddClass(c *Class) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.classes[classKey(c.Namespace, c.Name)] = c
}

// Add adds an instance of a registered class and returns it.
func (p *Provider) Add(ns, class string, props map[string]any) *Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.AddLocked(ns, class, props)
}

// AddLocked is Add for a Method's Run, which holds the lock.
func (p *Provider) AddLocked(ns, class string, props map[string]any) *Instance {
	c := p.classes[classKey(ns, class)]
	if c == nil {
		panic("wmitest: no class " + class + " in " + ns)
	}
	in := &Instance{Class: c.Name, Props: props}
	k := classKey(ns, class)
	p.instances[k] = append(p.instances[k], in)
	return in
}

// RemoveLocked removes an instance; for a Method's Run.
func (p *Provider) RemoveLocked(ns string, in *Instance) {
	k := classKey(ns, in.Class)
	list := p.instances[k]
	for i, x := range list {
		if x == in {
			p.instances[k] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	for ac, pairs := range p.assoc {
		kept := pairs[:0]
		for _, pr := range pairs {
			if pr[0] != in && pr[1] != in {
				kept = append(kept, pr)
			}
		}
		p.assoc[ac] = kept
	}
}

// Associate links a and b by the association class assoc, which
// ASSOCIATORS OF follows both ways.
func (p *Provider) Associate(assoc string, a, b *Instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.AssociateLocked(assoc, a, b)
}

// AssociateLocked is Associate for a Method's Run.
func (p *Provider) AssociateLocked(assoc string, a, b *Instance) {
	k := strings.ToLower(assoc)
	p.assoc[k] = append(p.assoc[k], [2]*Instance{a, b})
}

// Instances returns the instances of a class, for a test's checks or a
// Method's Run (with the lock held: InstancesLocked).
func (p *Provider) Instances(ns, class string) []*Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.InstancesLocked(ns, class)
}

// InstancesLocked is Instances for a Method's Run.
func (p *Provider) InstancesLocked(ns, class string) []*Instance {
	return append([]*Instance(nil), p.instances[classKey(ns, class)]...)
}

// Calls returns the method calls made so far.
func (p *Provider) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// Queries returns the WQL queries run so far.
func (p *Provider) Queries() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.queries...)
}

// Hold makes calls of class.method wait, before they run, until the
// returned release is called: a provider that has not answered yet. A
// held call still returns when its context ends, and then runs on
// release, as a provider's work goes on after WMI's caller gave up.
func (p *Provider) Hold(class, method string) (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	p.holds[strings.ToLower(class+"."+method)] = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.holds, strings.ToLower(class+"."+method))
			p.mu.Unlock()
			close(ch)
		})
	}
}

// RelPath is the relative path of the instance of class whose key
// property is value: Class.Key="value", with backslashes and double
// quotes escaped.
func RelPath(class, key, value string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return class + "." + key + `="` + r.Replace(value) + `"`
}

func (p *Provider) object(c *Class, in *Instance) wmi.Object {
	props := make(map[string]any, len(in.Props))
	for k, v := range in.Props {
		props[k] = v
	}
	path := c.Name
	if c.Key != "" {
		key, _ := in.Props[c.Key].(string)
		path = RelPath(c.Name, c.Key, key)
	}
	return wmi.Object{Class: c.Name, Path: path, Props: props}
}

// find resolves a path: a class name (nil instance) or Class.Key="value".
func (p *Provider) find(ns, path string) (*Instance, *Class, error) {
	name, keyPart, hasKey := strings.Cut(path, ".")
	c := p.classes[classKey(ns, name)]
	if c == nil {
		return nil, nil, &wmi.Error{Op: "get " + path, HRESULT: wmi.WBEMEInvalidClass}
	}
	if !hasKey {
		return nil, c, nil
	}
	key, quoted, ok := strings.Cut(keyPart, "=")
	if !ok || !strings.EqualFold(key, c.Key) || len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return nil, nil, &wmi.Error{Op: "get " + path, HRESULT: wmi.WBEMEInvalidObjPath}
	}
	value, err := unescapePath(quoted[1 : len(quoted)-1])
	if err != nil {
		return nil, nil, &wmi.Error{Op: "get " + path, HRESULT: wmi.WBEMEInvalidObjPath}
	}
	for _, in := range p.instances[classKey(ns, c.Name)] {
		if v, _ := in.Props[c.Key].(string); v == value {
			return in, c, nil
		}
	}
	return nil, nil, &wmi.Error{Op: "get " + path, HRESULT: wmi.WBEMENotFound}
}

func unescapePath(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) || (s[i+1] != '\\' && s[i+1] != '"') {
				return "", fmt.Errorf("bad escape")
			}
			i++
		case '"':
			return "", fmt.Errorf("unescaped quote")
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// Get implements wmi.Conn.
func (p *Provider) Get(ctx context.Context, ns, path string) (wmi.Object, error) {
	if err := ctx.Err(); err != nil {
		return wmi.Object{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, c, err := p.find(ns, path)
	if err != nil {
		return wmi.Object{}, err
	}
	if in == nil {
		return wmi.Object{Class: c.Name, Path: c.Name, Props: map[string]any{}}, nil
	}
	return p.object(c, in), nil
}

// Call implements wmi.Conn: it checks the in-parameters against the
// method's signature, waits while the method is held (returning when ctx
// ends), then runs it.
func (p *Provider) Call(ctx context.Context, ns, path, method string, in ...wmi.Param) (wmi.Object, error) {
	if err := ctx.Err(); err != nil {
		return wmi.Object{}, err
	}
	p.mu.Lock()
	op := path + "." + method
	self, c, err := p.find(ns, path)
	if err != nil {
		p.mu.Unlock()
		return wmi.Object{}, err
	}
	op = c.Name + "." + method
	m, ok := c.Methods[method]
	if !ok || m.Static != (self == nil) {
		p.mu.Unlock()
		return wmi.Object{}, &wmi.Error{Op: op, HRESULT: wmi.WBEMEInvalidMethod}
	}
	args := map[string]any{}
	for _, a := range in {
		spec, found := paramSpec(m.In, a.Name)
		if !found || reflect.TypeOf(a.Value) != reflect.TypeOf(spec.Type) {
			p.mu.Unlock()
			return wmi.Object{}, fmt.Errorf("%w: parameter %s %T", &wmi.Error{Op: op, HRESULT: wmi.WBEMEInvalidParam}, a.Name, a.Value)
		}
		if _, dup := args[spec.Name]; dup {
			p.mu.Unlock()
			return wmi.Object{}, &wmi.Error{Op: op, HRESULT: wmi.WBEMEInvalidParam}
		}
		args[spec.Name] = a.Value
	}
	p.calls = append(p.calls, Call{Namespace: ns, Path: path, Method: c.Name + "." + method, In: args})
	hold := p.holds[strings.ToLower(c.Name+"."+method)]
	p.mu.Unlock()

	type result struct {
		obj wmi.Object
		err error
	}
	done := make(chan result, 1)
	go func() {
		if hold != nil {
			<-hold
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		code, out := m.Run(p, self, args)
		props := map[string]any{"ReturnValue": code}
		for k, v := range out {
			if _, ok := paramSpec(m.Out, k); !ok {
				done <- result{err: fmt.Errorf("wmitest: %s returned out-parameter %s, not in its signature", op, k)}
				return
			}
			props[k] = v
		}
		done <- result{obj: wmi.Object{Class: "__PARAMETERS", Props: props}}
	}()
	select {
	case r := <-done:
		return r.obj, r.err
	case <-ctx.Done():
		return wmi.Object{}, ctx.Err()
	}
}

func paramSpec(specs []Param, name string) (Param, bool) {
	for _, s := range specs {
		if strings.EqualFold(s.Name, name) {
			return s, true
		}
	}
	return Param{}, false
}

// Classes lists the registered classes, for a test's report.
func (p *Provider) Classes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.classes {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}
