// Package filesystem serves the CSI Proxy filesystem API group, versions
// v1alpha1, v1beta1, v1beta2, v1 and v2alpha1, with every path confined.
package filesystem
