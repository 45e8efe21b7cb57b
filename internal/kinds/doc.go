// Package kinds is the one table of the kinds of object pipeguard reviews
// for pipe mounts. The webhook decides which requests it reviews from it,
// the inventory and the background audit list, cache and strip what it
// names, and `pipeguard policy eval` names its kinds when it skips an
// object. The tests of test/admission keep the webhook configuration in
// config/webhook, its matchConditions and the list in
// docs/writing-policies.md in step with it, so that adding a kind here and
// nowhere else fails a test instead of leaving a kind unguarded.
package kinds
