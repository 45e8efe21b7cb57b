//go:build !windows

package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// startControlPlane starts kube-apiserver and etcd from KUBEBUILDER_ASSETS
// (see hack/control-plane.sh) with the CRDs of the YAML files crdPaths
// installed, and returns the client
// configuration, a kubeconfig and the function that stops both.
func startControlPlane(crdPaths []string) (*rest.Config, []byte, func() error, error) {
	dir, err := testenv.AssetsDir()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w (build a control plane with hack/control-plane.sh and set %s to the directory it prints)",
			err, testenv.AssetsEnv)
	}
	te := &envtest.Environment{UseExistingCluster: ptr.To(false), BinaryAssetsDirectory: dir,
		CRDDirectoryPaths: crdPaths, ErrorIfCRDPathMissing: true}
	te.ControlPlane.APIServer = &envtest.APIServer{Path: filepath.Join(dir, "kube-apiserver")}
	te.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(dir, "etcd")}
	te.ControlPlane.KubectlPath = filepath.Join(dir, "kubectl")
	cfg, err := te.Start()
	if err != nil {
		return nil, nil, nil, errors.Join(fmt.Errorf("starting kube-apiserver and etcd from %s: %w", dir, err), te.Stop())
	}
	return cfg, te.KubeConfig, te.Stop, nil
}
