// Package v1alpha1 holds the PipeAccessPolicy API (group pipeguard.io,
// version v1alpha1): the cluster-scoped object through which cluster admins
// say which host named pipes are protected, who may still mount them, and
// what happens to everyone else.
//
// +kubebuilder:object:generate=true
// +groupName=pipeguard.io
package v1alpha1
