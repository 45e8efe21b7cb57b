package wmitest

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// Query implements wmi.Conn for SELECT ... FROM class [WHERE p = v [AND
// ...]] and ASSOCIATORS OF {path} WHERE AssocClass = a ResultClass = r.
func (p *Provider) Query(ctx context.Context, ns, q string) ([]wmi.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queries = append(p.queries, q)
	var (
		matches []*Instance
		c       *Class
		err     error
	)
	if strings.HasPrefix(strings.ToUpper(q), "ASSOCIATORS OF ") {
		matches, c, err = p.associators(ns, q)
	} else {
		matches, c, err = p.selectQuery(ns, q)
	}
	if err != nil {
		return nil, err
	}
	if len(matches) > wmi.MaxObjects {
		return nil, fmt.Errorf("wmitest: %d objects, more than %d", len(matches), wmi.MaxObjects)
	}
	out := make([]wmi.Object, 0, len(matches))
	for _, in := range matches {
		out = append(out, p.object(c, in))
	}
	return out, nil
}

func invalidQuery(q string) error {
	return &wmi.Error{Op: "query " + q, HRESULT: wmi.WBEMEInvalidQuery}
}

func (p *Provider) selectQuery(ns, q string) ([]*Instance, *Class, error) {
	toks, err := lex(q)
	if err != nil {
		return nil, nil, invalidQuery(q)
	}
	// SELECT <* | p, p> FROM class [WHERE cond {AND cond}]
	if len(toks) < 4 || !toks[0].is("SELECT") {
		return nil, nil, invalidQuery(q)
	}
	i := 1
	for i < len(toks) && !toks[i].is("FROM") {
		i++
	}
	if i+1 >= len(toks) || toks[i+1].kind != tokWord {
		return nil, nil, invalidQuery(q)
	}
	c := p.classes[classKey(ns, toks[i+1].text)]
	if c == nil {
		return nil, nil, &wmi.Error{Op: "query " + q, HRESULT: wmi.WBEMEInvalidClass}
	}
	conds, err := parseWhere(toks[i+2:])
	if err != nil {
		return nil, nil, invalidQuery(q)
	}
	var out []*Instance
	for _, in := range p.instances[classKey(ns, c.Name)] {
		if matchAll(in, conds) {
			out = append(out, in)
		}
	}
	return out, c, nil
}

type cond struct {
	prop  string
	value any
}

func parseWhere(toks []token) ([]cond, error) {
	if len(toks) == 0 {
		return nil, nil
	}
	if !toks[0].is("WHERE") {
		return nil, fmt.Errorf("want WHERE")
	}
	toks = toks[1:]
	var conds []cond
	for {
		if len(toks) < 3 || toks[0].kind != tokWord || toks[1].kind != tokEq || toks[2].kind != tokValue {
			return nil, fmt.Errorf("want prop = value")
		}
		conds = append(conds, cond{toks[0].text, toks[2].value})
		toks = toks[3:]
		if len(toks) == 0 {
			return conds, nil
		}
		if !toks[0].is("AND") {
			return nil, fmt.Errorf("want AND")
		}
		toks = toks[1:]
	}
}

func matchAll(in *Instance, conds []cond) bool {
	for _, c := range conds {
		v, ok := lookup(in.Props, c.prop)
		if !ok || !equal(v, c.value) {
			return false
		}
	}
	return true
}

func lookup(props map[string]any, name string) (any, bool) {
	for k, v := range props {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// equal compares a property with a WQL literal: strings without case, as
// WQL does, numbers by value, booleans.
func equal(v, lit any) bool {
	switch l := lit.(type) {
	case string:
		s, ok := v.(string)
		return ok && strings.EqualFold(s, l)
	case bool:
		b, ok := v.(bool)
		return ok && b == l
	case uint64:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return rv.Uint() == l
		case reflect.Int32, reflect.Int64:
			return rv.Int() >= 0 && uint64(rv.Int()) == l
		}
	}
	return false
}

func (p *Provider) associators(ns, q string) ([]*Instance, *Class, error) {
	// ASSOCIATORS OF {path} WHERE AssocClass = a ResultClass = r
	rest := q[len("ASSOCIATORS OF "):]
	if !strings.HasPrefix(rest, "{") {
		return nil, nil, invalidQuery(q)
	}
	end := strings.Index(rest, "}")
	if end < 0 {
		return nil, nil, invalidQuery(q)
	}
	path, tail := rest[1:end], strings.Fields(rest[end+1:])
	if len(tail) != 7 || !strings.EqualFold(tail[0], "WHERE") || !strings.EqualFold(tail[1], "AssocClass") || tail[2] != "=" ||
		!strings.EqualFold(tail[4], "ResultClass") || tail[5] != "=" {
		return nil, nil, invalidQuery(q)
	}
	src, _, err := p.find(ns, path)
	if err != nil {
		return nil, nil, err
	}
	rc := p.classes[classKey(ns, tail[6])]
	if rc == nil || src == nil {
		return nil, nil, &wmi.Error{Op: "query " + q, HRESULT: wmi.WBEMEInvalidClass}
	}
	var out []*Instance
	for _, pr := range p.assoc[strings.ToLower(tail[3])] {
		for j, in := range pr {
			if in == src && strings.EqualFold(pr[1-j].Class, rc.Name) {
				out = append(out, pr[1-j])
			}
		}
	}
	return out, rc, nil
}
