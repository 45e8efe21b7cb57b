package compare

// Every API group version of CSI Proxy v1.3.0, so that the tests see every
// method any version declares.

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
