// Package policy turns PipeAccessPolicies and pipeguard's shipped rego into
// admission decisions.
//
// An Engine holds one compiled Generation at a time: the shipped rules, the
// admin-written rego of every policy, and the policies' settings. A new set
// of policies is compiled and prepared off to the side and swapped in
// atomically; a set that fails to compile never replaces the last good one,
// so enforcement never lapses. Evaluation is safe for concurrent use.
//
// The rego input document (Input) is versioned and described in
// docs/writing-policies.md.
package policy
