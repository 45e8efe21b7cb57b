package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/pipeguard/pipeguard/hack/render"
)

// writeAdmissionFiles writes the manifests as the files kube-apiserver
// loads (render.AdmissionFiles) into o.AdmissionFiles, replacing what an
// earlier run wrote there, and lists them on stderr.
func writeAdmissionFiles(o options, manifests []byte) error {
	if o.Files.URL == "" {
		return fmt.Errorf("WEBHOOK_URL is not set: a webhook loaded from a file cannot call a Service, so name the https URL kube-apiserver reaches pipeguard-webhook at, such as WEBHOOK_URL=https://10.0.0.10:9443/validate")
	}
	if o.CAFile == "" {
		return fmt.Errorf("WEBHOOK_CA_FILE is not set: name the PEM file of the CA that signed pipeguard-webhook's serving certificate; kube-apiserver trusts only it when it calls the webhook")
	}
	ca, err := os.ReadFile(o.CAFile)
	if err != nil {
		return fmt.Errorf("WEBHOOK_CA_FILE: %w", err)
	}
	o.Files.CABundle = ca
	objs, err := render.Parse(manifests)
	if err != nil {
		return err
	}
	files, err := render.AdmissionFiles(objs, o.Files)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(o.AdmissionFiles); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(o.AdmissionFiles, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	dir := o.Files.Dir
	if dir == "" {
		dir = render.DefaultAdmissionDir
	}
	fmt.Fprintf(os.Stderr, "kustomization: wrote the admission configuration files into %s; copy them to %s on every control-plane node:\n", o.AdmissionFiles, dir)
	for _, name := range names {
		fmt.Fprintf(os.Stderr, "  %s\n", filepath.ToSlash(filepath.Join(dir, name)))
	}
	fmt.Fprintf(os.Stderr, "and start kube-apiserver with --admission-control-config-file=%s (docs/install.md).\n", filepath.ToSlash(filepath.Join(dir, render.AdmissionConfigFile)))
	return nil
}
