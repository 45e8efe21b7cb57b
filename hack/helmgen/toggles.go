package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pipeguard/pipeguard/hack/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// toggle is one on/off value of the chart and the overlays it selects.
type toggle struct {
	// Value is the path of the boolean in values.yaml.
	Value string
	// Doc says what turning it on installs, for values.yaml and the README.
	Doc string
}

// toggles are the chart's overlay switches, in the bit order of a combo.
var toggles = []toggle{
	{"certManager.enabled", "TLS from cert-manager (config/cert-manager) instead of the certificate pipeguard-webhook issues and rotates itself (config/default). Needs cert-manager and its CRDs."},
	{"prometheus.enabled", "Monitoring (config/prometheus): the metrics Service, ServiceMonitor, alerts and Grafana dashboard of the webhook; with agent.enabled also the agent's PodMonitor (config/prometheus-agent). Needs the Prometheus Operator's CRDs."},
	{"policyReport.enabled", "The wgpolicyk8s.io PolicyReport CRDs and the RBAC for the background audit to write reports of both groups (config/policyreport)."},
	{"agent.enabled", "The node agent as a Windows HostProcess DaemonSet in pipeguard-agent (config/agent). Needs agent.image."},
	{"openReports.enabled", "The openreports.io Report CRDs (Kyverno 1.15 and later) and the RBAC for the background audit to write reports of both groups (config/policyreport/openreports); in place of or next to policyReport.enabled."},
}

const (
	tCertManager = iota
	tPrometheus
	tPolicyReport
	tAgent
	tOpenReports
)

// combo is one setting of every toggle, bit i for toggles[i].
type combo uint

func (c combo) on(t int) bool { return c&(1<<t) != 0 }

// combos is the number of settings of the toggles.
var combos = combo(1) << len(toggles)

// overlays lists the directories of config/ that make up c.
func (c combo) overlays() []string {
	out := []string{"default"}
	if c.on(tCertManager) {
		out[0] = "cert-manager"
	}
	switch {
	case c.on(tPrometheus) && c.on(tAgent):
		out = append(out, "prometheus-agent")
	case c.on(tPrometheus):
		out = append(out, "prometheus")
	}
	if c.on(tPolicyReport) {
		out = append(out, "policyreport")
	}
	if c.on(tOpenReports) {
		out = append(out, "policyreport/openreports")
	}
	if c.on(tAgent) {
		out = append(out, "agent")
	}
	return out
}

// renderCombo renders the overlays of c into objects keyed by identity. An
// object two overlays render differently is an error: the chart could not
// say which one to install.
// Each overlay is rendered once, into cache.
func renderCombo(config string, c combo, cache map[string][]*unstructured.Unstructured) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	from := map[string]string{}
	for _, o := range c.overlays() {
		objs, ok := cache[o]
		if !ok {
			var err error
			if objs, err = render.Objects(filepath.Join(config, o), render.Options{}); err != nil {
				return nil, err
			}
			cache[o] = objs
		}
		for _, obj := range objs {
			id := identity(obj)
			if prev, ok := out[id]; ok {
				if !equalObjects(prev, obj) {
					return nil, fmt.Errorf("config/%s and config/%s both render %s, differently: one overlay must own it", from[id], o, id)
				}
				continue
			}
			out[id], from[id] = obj, o
		}
	}
	return out, nil
}

// identity names an object as the API server does: group, kind, namespace
// and name.
func identity(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	return strings.Join([]string{gvk.Group, gvk.Kind, o.GetNamespace(), o.GetName()}, "/")
}

// condition is the Helm template test under which a variant is rendered:
// "" for always.
func condition(set map[combo]bool) string {
	var deps []int
	for t := range toggles {
		for c := combo(0); c < combos; c++ {
			if set[c] != set[c^(1<<t)] {
				deps = append(deps, t)
				break
			}
		}
	}
	if len(deps) == 0 {
		return ""
	}
	var terms []string
	for a := 0; a < 1<<len(deps); a++ {
		var c combo
		for i, t := range deps {
			if a&(1<<i) != 0 {
				c |= 1 << t
			}
		}
		if !set[c] {
			continue
		}
		var lits []string
		for _, t := range deps {
			lit := ".Values." + toggles[t].Value
			if !c.on(t) {
				lit = "(not " + lit + ")"
			}
			lits = append(lits, lit)
		}
		if len(lits) == 1 {
			terms = append(terms, lits[0])
		} else {
			terms = append(terms, "(and "+strings.Join(lits, " ")+")")
		}
	}
	if len(terms) == 1 {
		return strings.TrimSuffix(strings.TrimPrefix(terms[0], "("), ")")
	}
	return "or " + strings.Join(terms, " ")
}

// fileName is the template file for objects rendered under cond.
func fileName(cond string) string {
	if cond == "" {
		return "pipeguard.yaml"
	}
	cond = strings.TrimPrefix(cond, "and ")
	r := strings.NewReplacer(".Values.", "", ".enabled", "", "(not ", "no-", "not ", "no-", "(", "", ")", "", " ", "-")
	return strings.ToLower(r.Replace(cond)) + ".yaml"
}
