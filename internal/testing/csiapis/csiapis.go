// Package csiapis registers the message and service descriptors of every
// CSI Proxy API version pipeguard-agent serves, for code that walks them
// through protoregistry: hack/groupgen, which writes the agent's adapters
// from them, and tests that check every request type of every version.
// It sits in internal/testing, not beside hack/groupgen, because the tests
// of agent packages import it too, and a product package's tests may use a
// test helper but no tool of hack/. Import it for its side effect:
//
//	import _ "github.com/pipeguard/pipeguard/internal/testing/csiapis"
package csiapis

import (
	_ "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1alpha1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta2"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta3"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1alpha1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1beta1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1beta2"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v2alpha1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/iscsi/v1alpha1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/iscsi/v1alpha2"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1alpha1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1beta1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1beta2"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1alpha1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta1"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta2"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1beta3"
	_ "github.com/kubernetes-csi/csi-proxy/client/api/volume/v2alpha1"
)
