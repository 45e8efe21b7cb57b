package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/internal/kinds"
)

// listTypes makes the list type of each kind the audit reads, keyed by kind
// name: the lists of package kinds' table.
var listTypes = func() map[string]func() client.ObjectList {
	all := kinds.All()
	m := make(map[string]func() client.ObjectList, len(all))
	for _, k := range all {
		m[k.GVK.Kind] = func() client.ObjectList { return k.NewList() }
	}
	return m
}()

// itemsOf returns the objects of a typed list.
func itemsOf(list client.ObjectList) ([]client.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("audit: reading %T: %w", list, err)
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		co, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("audit: %T in %T is not an object", o, list)
		}
		out = append(out, co)
	}
	return out, nil
}
