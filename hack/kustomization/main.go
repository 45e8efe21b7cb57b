// Command kustomization writes the kustomization.yaml that `make render` and
// `make deploy` build: one overlay of config/ with the images set from IMG
// and AGENT_IMG. Each image reference is parsed as docker reads it
// (hack/imageref), so a registry port is never taken for a tag, a
// digest pins the image, and a malformed reference stops make with an error
// that says what is wrong with which variable.
//
// For make deploy, --preflight-kubectl first checks that the cluster has
// the CRDs of other projects the overlay needs (the Prometheus Operator's
// for config/prometheus, cert-manager's for config/cert-manager); when one
// is missing it writes nothing and says what installs it and what to apply
// instead, so that kubectl never half-applies the overlay.
//
// With --render it also builds that kustomization, with kustomize's Go API
// (hack/render), into manifests.yaml beside it: make render needs no
// kubectl, and make deploy uses kubectl only to apply. With --admission-files
// as well (make render OVERLAY=manifest-admission), it writes the rendered
// manifests as the files kube-apiserver loads its admission configuration
// from (render.AdmissionFiles), calling --webhook-url and trusting
// --webhook-ca-file, and says where they go.
//
//	go run ./hack/kustomization --overlay default --out bin/deploy --render \
//	    --img localhost:5000/pipeguard:v1 --agent-img localhost:5000/pipeguard-agent:v1
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/hack/render"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("kustomization", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.Config, "config", "config", "the kustomize tree")
	fs.StringVar(&o.Overlay, "overlay", "default", "the directory of --config to install (make's OVERLAY)")
	fs.StringVar(&o.Out, "out", "bin/deploy", "the directory to write kustomization.yaml into")
	fs.StringVar(&o.Img, "img", "", "the webhook and CLI image (make's IMG)")
	fs.StringVar(&o.AgentImg, "agent-img", "", "the agent image (make's AGENT_IMG)")
	fs.BoolVar(&o.Render, "render", false, "also build the kustomization into manifests.yaml in --out")
	fs.StringVar(&o.PreflightKubectl, "preflight-kubectl", "", "before writing, check with this kubectl that the cluster of its current context has the CRDs the overlay needs from other projects (make deploy); empty: no check (make render)")
	fs.StringVar(&o.AdmissionFiles, "admission-files", "", "with --render, also write the rendered admission configuration as the files kube-apiserver loads (config/manifest-admission) into this directory")
	fs.StringVar(&o.Files.Dir, "admission-dir", render.DefaultAdmissionDir, "the absolute directory the admission files go to on the control-plane nodes, named in admission-configuration.yaml (make's ADMISSION_DIR)")
	fs.StringVar(&o.Files.URL, "webhook-url", "", "the https URL kube-apiserver calls pipeguard-webhook at, for --admission-files (make's WEBHOOK_URL)")
	fs.StringVar(&o.CAFile, "webhook-ca-file", "", "the PEM file of the CA of pipeguard-webhook's serving certificate, for --admission-files (make's WEBHOOK_CA_FILE)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "kustomization: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := write(o); err != nil {
		fmt.Fprintf(os.Stderr, "kustomization: %v\n", err)
		return 1
	}
	if o.Render {
		manifests, err := render.Overlay(o.Out, render.Options{})
		if err == nil {
			err = os.WriteFile(filepath.Join(o.Out, "manifests.yaml"), manifests, 0o644)
		}
		if err == nil && o.AdmissionFiles != "" {
			err = writeAdmissionFiles(o, manifests)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "kustomization: config/%s: %v\n", o.Overlay, err)
			return 1
		}
	}
	return 0
}

type options struct {
	Config, Overlay, Out, Img, AgentImg string
	// Render builds the kustomization written into Out/manifests.yaml.
	Render bool
	// PreflightKubectl, when set, is the kubectl with which the cluster is
	// checked for the overlay's prerequisites before anything is written.
	PreflightKubectl string
	// AdmissionFiles, when set, is where the rendered manifests are written
	// as kube-apiserver's admission configuration files; Files and CAFile
	// say how they call the webhook.
	AdmissionFiles string
	Files          render.FileOptions
	CAFile         string
}

type kustomization struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Resources  []string       `json:"resources"`
	Images     []render.Image `json:"images"`
}

// write writes o.Out/kustomization.yaml, or nothing when an input is wrong.
func write(o options) error {
	overlay, err := overlayDir(o.Config, o.Overlay)
	if err != nil {
		return err
	}
	var images []render.Image
	for _, in := range []struct{ variable, ref, name string }{
		{"IMG", o.Img, render.WebhookRepository},
		{"AGENT_IMG", o.AgentImg, render.AgentRepository},
	} {
		img, err := render.ImageEntry(in.name, in.ref)
		if err != nil {
			return fmt.Errorf("%s: %w", in.variable, err)
		}
		images = append(images, img)
	}
	if o.PreflightKubectl != "" {
		if err := preflight(o.PreflightKubectl, o.Overlay); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(out, overlay)
	if err != nil {
		return fmt.Errorf("config/%s cannot be reached from %s: %w", o.Overlay, o.Out, err)
	}
	b, err := yaml.Marshal(kustomization{
		APIVersion: "kustomize.config.k8s.io/v1beta1", Kind: "Kustomization",
		Resources: []string{filepath.ToSlash(rel)}, Images: images,
	})
	if err != nil {
		return err
	}
	b = append([]byte("# Written by hack/kustomization (make render, make deploy); changes are overwritten.\n"), b...)
	return os.WriteFile(filepath.Join(o.Out, "kustomization.yaml"), b, 0o644)
}

// overlayDir returns the absolute directory of config/overlay, or an error
// that lists the overlays there are.
func overlayDir(config, overlay string) (string, error) {
	dir, err := filepath.Abs(filepath.Join(config, overlay))
	if err != nil {
		return "", err
	}
	if overlay == "" || strings.Contains(overlay, "..") {
		return "", fmt.Errorf("OVERLAY=%q is not a directory of %s; choose one of: %s", overlay, config, strings.Join(overlays(config), ", "))
	}
	if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err != nil {
		return "", fmt.Errorf("OVERLAY=%s: %s/%s has no kustomization.yaml; choose one of: %s", overlay, config, overlay, strings.Join(overlays(config), ", "))
	}
	return dir, nil
}

// overlays lists the directories of config with a kustomization.yaml.
func overlays(config string) []string {
	var out []string
	_ = filepath.WalkDir(config, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "kustomization.yaml" && filepath.Dir(path) != config {
			rel, _ := filepath.Rel(config, filepath.Dir(path))
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}
