package policyreport

import (
	"sort"
	"strconv"
)

// Key names one stored report.
type Key struct {
	Kind, Namespace, Name string
}

// Stored is what the writer needs of a stored report.
type Stored struct {
	Key
	Summary Summary
	Results []Result
	// Omitted is the value of OmittedAnnotation, empty when absent.
	Omitted string
	// Source is the report's top-level source, where its API has one.
	Source string
}

// Plan is what one pass writes: reports to create, to update (with the
// stored version they replace) and to delete.
type Plan struct {
	Create []*Report
	Update []Update
	Delete []Key
}

// Update replaces a stored report with a new content.
type Update struct {
	Report *Report
	Stored Key
}

// MakePlan compares the wanted reports with the stored ones of api
// (pipeguard's, found by their label): a wanted report that is not stored
// is created; a stored one whose content differs is updated; an identical
// one is left alone; every stored report that is not wanted (its namespace
// has no violation left, or it bears another name) is deleted.
func MakePlan(api API, want map[string]*Report, stored []Stored) Plan {
	var p Plan
	have := map[string]*Stored{}
	for i := range stored {
		s := &stored[i]
		w, ok := want[s.Namespace]
		if !ok || s.Name != ReportName || s.Kind != api.KindOf(w) {
			p.Delete = append(p.Delete, s.Key)
			continue
		}
		have[s.Namespace] = s
	}
	namespaces := make([]string, 0, len(want))
	for ns := range want {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		w := want[ns]
		s, ok := have[ns]
		switch {
		case !ok:
			p.Create = append(p.Create, w)
		case !same(w, s) || s.Source != api.ReportSource:
			p.Update = append(p.Update, Update{Report: w, Stored: s.Key})
		}
	}
	sort.Slice(p.Delete, func(i, j int) bool {
		a, b := p.Delete[i], p.Delete[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return p
}

// same reports whether a stored report already holds w's content.
func same(w *Report, s *Stored) bool {
	if w.Summary != s.Summary || omitted(w.Omitted) != s.Omitted || len(w.Results) != len(s.Results) {
		return false
	}
	for i := range w.Results {
		if identity(w.Results[i]) != identity(s.Results[i]) || w.Results[i].Timestamp != s.Results[i].Timestamp {
			return false
		}
	}
	return true
}

// omitted renders the value of OmittedAnnotation; "" when nothing was left
// out (no annotation).
func omitted(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
