//go:build windows

package main

import (
	diskv1 "github.com/kubernetes-csi/csi-proxy/client/groups/disk/v1"
	diskv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/groups/disk/v1alpha1"
	diskv1beta1 "github.com/kubernetes-csi/csi-proxy/client/groups/disk/v1beta1"
	diskv1beta2 "github.com/kubernetes-csi/csi-proxy/client/groups/disk/v1beta2"
	diskv1beta3 "github.com/kubernetes-csi/csi-proxy/client/groups/disk/v1beta3"
	filesystemv1 "github.com/kubernetes-csi/csi-proxy/client/groups/filesystem/v1"
	filesystemv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/groups/filesystem/v1alpha1"
	filesystemv1beta1 "github.com/kubernetes-csi/csi-proxy/client/groups/filesystem/v1beta1"
	filesystemv1beta2 "github.com/kubernetes-csi/csi-proxy/client/groups/filesystem/v1beta2"
	filesystemv2alpha1 "github.com/kubernetes-csi/csi-proxy/client/groups/filesystem/v2alpha1"
	iscsiv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/groups/iscsi/v1alpha1"
	iscsiv1alpha2 "github.com/kubernetes-csi/csi-proxy/client/groups/iscsi/v1alpha2"
	smbv1 "github.com/kubernetes-csi/csi-proxy/client/groups/smb/v1"
	smbv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/groups/smb/v1alpha1"
	smbv1beta1 "github.com/kubernetes-csi/csi-proxy/client/groups/smb/v1beta1"
	smbv1beta2 "github.com/kubernetes-csi/csi-proxy/client/groups/smb/v1beta2"
	systemv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/groups/system/v1alpha1"
	volumev1 "github.com/kubernetes-csi/csi-proxy/client/groups/volume/v1"
	volumev1alpha1 "github.com/kubernetes-csi/csi-proxy/client/groups/volume/v1alpha1"
	volumev1beta1 "github.com/kubernetes-csi/csi-proxy/client/groups/volume/v1beta1"
	volumev1beta2 "github.com/kubernetes-csi/csi-proxy/client/groups/volume/v1beta2"
	volumev1beta3 "github.com/kubernetes-csi/csi-proxy/client/groups/volume/v1beta3"
	volumev2alpha1 "github.com/kubernetes-csi/csi-proxy/client/groups/volume/v2alpha1"
)

// clients opens a client of each API group version with the unmodified CSI
// Proxy client library, which dials \\.\pipe\csi-proxy-<group>-<version>.
var clients = map[string]func() (any, error){
	"disk/v1":             func() (any, error) { return diskv1.NewClient() },
	"disk/v1alpha1":       func() (any, error) { return diskv1alpha1.NewClient() },
	"disk/v1beta1":        func() (any, error) { return diskv1beta1.NewClient() },
	"disk/v1beta2":        func() (any, error) { return diskv1beta2.NewClient() },
	"disk/v1beta3":        func() (any, error) { return diskv1beta3.NewClient() },
	"filesystem/v1":       func() (any, error) { return filesystemv1.NewClient() },
	"filesystem/v1alpha1": func() (any, error) { return filesystemv1alpha1.NewClient() },
	"filesystem/v1beta1":  func() (any, error) { return filesystemv1beta1.NewClient() },
	"filesystem/v1beta2":  func() (any, error) { return filesystemv1beta2.NewClient() },
	"filesystem/v2alpha1": func() (any, error) { return filesystemv2alpha1.NewClient() },
	"iscsi/v1alpha1":      func() (any, error) { return iscsiv1alpha1.NewClient() },
	"iscsi/v1alpha2":      func() (any, error) { return iscsiv1alpha2.NewClient() },
	"smb/v1":              func() (any, error) { return smbv1.NewClient() },
	"smb/v1alpha1":        func() (any, error) { return smbv1alpha1.NewClient() },
	"smb/v1beta1":         func() (any, error) { return smbv1beta1.NewClient() },
	"smb/v1beta2":         func() (any, error) { return smbv1beta2.NewClient() },
	"system/v1alpha1":     func() (any, error) { return systemv1alpha1.NewClient() },
	"volume/v1":           func() (any, error) { return volumev1.NewClient() },
	"volume/v1alpha1":     func() (any, error) { return volumev1alpha1.NewClient() },
	"volume/v1beta1":      func() (any, error) { return volumev1beta1.NewClient() },
	"volume/v1beta2":      func() (any, error) { return volumev1beta2.NewClient() },
	"volume/v1beta3":      func() (any, error) { return volumev1beta3.NewClient() },
	"volume/v2alpha1":     func() (any, error) { return volumev2alpha1.NewClient() },
}
