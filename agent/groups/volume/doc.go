// Package volume serves the CSI Proxy volume API group, versions v1alpha1,
// v1beta1, v1beta2, v1beta3, v1 and v2alpha1, with volume ids validated and
// every mount target path confined.
package volume
