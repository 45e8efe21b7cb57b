package main

import (
	"fmt"
	"strings"
)

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, ",") }

func (r *repeated) Set(v string) error {
	*r = append(*r, v)
	return nil
}

// namespaceLabels parses --namespace-labels NS=k=v[,k2=v2].
func namespaceLabels(values []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, v := range values {
		ns, pairs, ok := strings.Cut(v, "=")
		if !ok || ns == "" {
			return nil, fmt.Errorf("--namespace-labels %q: want NAMESPACE=key=value[,key2=value2]", v)
		}
		labels := out[ns]
		if labels == nil {
			labels = map[string]string{}
			out[ns] = labels
		}
		if pairs == "" {
			continue
		}
		for _, pair := range strings.Split(pairs, ",") {
			k, val, ok := strings.Cut(pair, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--namespace-labels %q: label %q is not key=value", v, pair)
			}
			labels[k] = val
		}
	}
	return out, nil
}
