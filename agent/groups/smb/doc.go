// Package smb serves the CSI Proxy smb API group, versions v1alpha1, v1beta1,
// v1beta2 and v1: SMB global mappings, with the remote path validated, the
// local path confined and the credentials passed only in the environment.
package smb
