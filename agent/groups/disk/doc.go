// Package disk serves the CSI Proxy disk API group, versions v1alpha1,
// v1beta1, v1beta2, v1beta3 and v1. Disks are addressed by number; the older
// versions send the number as a string, which must be a decimal number.
package disk
