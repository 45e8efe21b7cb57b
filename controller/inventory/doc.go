// Package inventory reads what already runs in a cluster (Pods, the
// workloads and PersistentVolumes the webhook reviews, namespace labels and
// the PipeAccessPolicies in force) and decides on every object exactly as
// admission would on its creation, through the webhook's typed decision
// call (webhook.Handler.Decide) and the policy engine. `pipeguard policy
// eval --cluster` prints its results.
package inventory
