package limits

import "unicode/utf8"

// Limits in bytes, as the API server counts them.
const (
	// EventNote bounds an Event's note (events.k8s.io/v1; the message of a
	// core/v1 Event that has an eventTime): the API server's event
	// validation refuses a longer one (NoteLengthLimit in
	// k8s.io/kubernetes/pkg/apis/core/validation/events.go).
	EventNote = 1024
	// ConditionMessage bounds a metav1.Condition's message: the maxLength
	// of the PipeAccessPolicy CRD schema (from metav1.Condition), which the
	// API server enforces on every status write.
	ConditionMessage = 32768
	// Message bounds the message of one violation in a policy's status and
	// in a PolicyReport result. Neither schema sets a maxLength; the limit
	// is the whole object's size (etcd's request limit, 1.5 MiB by
	// default), which a long message from an admin's rego repeated over
	// many entries could otherwise reach.
	Message = 4096
)

// Mark ends a text that was cut.
const Mark = "…"

// Fit renders a text about n items in at most max bytes. text(k) renders
// it with the first k items, end(m) is what follows when m items were left
// out (called with 0 too). Fit returns text(n)+end(0) when that fits, else
// text(k)+end(n-k) for the largest k that fits. When not even one item
// fits, text(1) is cut to make room for end(n-1); when end alone is too
// long, the whole text is cut. Cuts fall on a rune boundary and end with
// Mark. text(k) must not get shorter as k grows.
func Fit(max, n int, text func(k int) string, end func(omitted int) string) string {
	render := func(k int) (string, bool) {
		s := text(k) + end(n-k)
		return s, len(s) <= max
	}
	s, ok := render(n)
	if ok || n == 0 {
		return Cut(s, max)
	}
	// lo fits (or is 0), hi does not.
	lo, hi := 0, n
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, ok := render(mid); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo > 0 {
		s, _ := render(lo)
		return s
	}
	first, rest := text(1), end(n-1)
	if room := max - len(rest); room >= len(Mark) {
		return Cut(first, room) + rest
	}
	return Cut(first+rest, max)
}

// Cut returns s if it fits in max bytes, else its longest prefix that
// fits with Mark after it, never splitting a rune.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	mark := Mark
	if max < len(mark) {
		mark = ""
	}
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
