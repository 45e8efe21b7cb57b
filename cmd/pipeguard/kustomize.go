package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kustomizationIn returns the kustomization file of the directory dir, as
// kustomize names it (kustomization.yaml, kustomization.yml or
// Kustomization), or "" when dir is no directory or holds none.
func kustomizationIn(dir string) string {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return ""
	}
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p
		}
	}
	return ""
}

// kustomizeBuild builds the kustomization in dir with kustomize's Go API,
// as kubectl kustomize and kubectl apply -k do, and returns the YAML
// stream it builds.
func kustomizeBuild(dir string) ([]byte, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, badInput("kustomize %s: cannot read it: %v", dir, err)
	}
	if !info.IsDir() {
		return nil, badInput("kustomize %s: not a directory; -k takes the directory that holds a kustomization.yaml", dir)
	}
	if kustomizationIn(dir) == "" {
		return nil, badInput("kustomize %s: the directory holds no %s; give the directory of a kustomization, or its manifests with -f", dir, orList(konfig.RecognizedKustomizationFileNames()))
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, badInput("kustomize %s: %v", dir, strings.TrimSpace(err.Error()))
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, badInput("kustomize %s: encoding what it built: %v", dir, err)
	}
	return out, nil
}

// kustomizeDocuments builds the kustomization in dir and reads the objects
// it builds; each is named "kustomize DIR: document N".
func kustomizeDocuments(dir string, warn func(string)) ([]document, error) {
	out, err := kustomizeBuild(dir)
	if err != nil {
		return nil, err
	}
	return splitDocuments(fmt.Sprintf("kustomize %s", dir), out, warn)
}
