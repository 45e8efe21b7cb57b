// Package iscsi serves the CSI Proxy iscsi API group, versions v1alpha1 and
// v1alpha2, with portals, IQNs and CHAP credentials validated before any
// command runs.
package iscsi
