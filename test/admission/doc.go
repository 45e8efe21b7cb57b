// Package admission holds the webhook configuration pipeguard ships
// (config/webhook/manifests.yaml) to the rest of pipeguard. It has no code
// of its own, only tests:
//
//   - its rules send every kind of the one table, internal/kinds, and no
//     other, each through a prefilter that reads where that kind keeps its
//     volumes, and docs/writing-policies.md names the same kinds
//     (manifests_test.go);
//   - its CEL matchConditions, with which the API server decides before
//     calling the webhook whether a request could name a protected named
//     pipe at all, compiled and evaluated with the API server's own CEL
//     libraries, are held to package pipepath: every object of every
//     reviewed kind with a path pipepath protects reaches the webhook, and
//     ordinary host paths do not need it (a differential test over a corpus,
//     a fuzz target and loosened copies that the corpus must catch);
//   - the routed webhooks (HostProcess, claims) send what the handler
//     decides on, and the Namespace webhook's expression is held to the
//     webhook's namespace guard: a Namespace change reaches the webhook
//     exactly when the guard would refuse it to a user who may not grant.
//
// The kinds come from internal/kinds alone: a kind of the table these tests
// cannot build fails them, naming the kind, rather than going unchecked.
package admission
