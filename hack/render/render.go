package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/hack/imageref"
)

// The image repositories the manifests in config/ name, and the
// placeholder tag and digest config/manager and config/agent give them: no
// pipeguard image is published, so an overlay rendered without an image
// runs one that can never be pulled.
const (
	WebhookRepository = "ghcr.io/pipeguard/pipeguard"
	AgentRepository   = "ghcr.io/pipeguard/pipeguard-agent"
	PlaceholderTag    = "image-not-set"
	PlaceholderDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
)

// Options says which images the rendered manifests run.
type Options struct {
	// WebhookImage replaces WebhookRepository's image (pipeguard-webhook),
	// e.g. "registry.example.com/pipeguard:v0.1.0". Empty keeps the
	// overlay's, the placeholder.
	WebhookImage string
	// AgentImage replaces AgentRepository's image (pipeguard-agent). Empty
	// keeps the overlay's, the placeholder.
	AgentImage string
	// RequireImages refuses manifests that would run a placeholder image,
	// as make render and make deploy do.
	RequireImages bool
}

// Overlay renders the kustomization in dir (a directory of config/, or an
// overlay of one's own) into a multi-document YAML stream, the images set
// as opts says: the bytes kubectl kustomize writes. Errors name the overlay and what to do.
func Overlay(dir string, opts Options) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	if err := hasKustomization(dir, abs); err != nil {
		return nil, err
	}
	images, err := imageEntries(opts)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	root := abs
	if len(images) > 0 {
		// kustomize sets images from a kustomization, as make render does:
		// one written to a temporary directory that names dir as its
		// resource, so the images are matched by kustomize's own rules.
		tmp, err := os.MkdirTemp("", "pipeguard-render-")
		if err != nil {
			return nil, fmt.Errorf("render %s: temporary directory for the image settings: %w", dir, err)
		}
		defer os.RemoveAll(tmp)
		// kustomize takes no absolute resource paths.
		rel, err := filepath.Rel(tmp, abs)
		if err != nil {
			return nil, fmt.Errorf("render %s: cannot be reached from the temporary directory %s: %w", dir, tmp, err)
		}
		k := map[string]any{
			"apiVersion": "kustomize.config.k8s.io/v1beta1",
			"kind":       "Kustomization",
			"resources":  []string{filepath.ToSlash(rel)},
			"images":     images,
		}
		b, err := yaml.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", dir, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), b, 0o600); err != nil {
			return nil, fmt.Errorf("render %s: %w", dir, err)
		}
		root = tmp
	}
	// kubectl kustomize's order: Namespaces and CRDs before the objects
	// that need them.
	kopts := krusty.MakeDefaultOptions()
	kopts.Reorder = krusty.ReorderOptionLegacy
	m, err := krusty.MakeKustomizer(kopts).Run(filesys.MakeFsOnDisk(), root)
	if err != nil {
		return nil, fmt.Errorf("render %s: kustomize: %w; fix the kustomization (kubectl kustomize %s shows the same error)", dir, err, dir)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("render %s: writing the manifests: %w", dir, err)
	}
	if opts.RequireImages {
		if err := refusePlaceholders(dir, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Objects is Overlay, parsed: one object per document, in the order of
// kubectl kustomize.
func Objects(dir string, opts Options) ([]*unstructured.Unstructured, error) {
	b, err := Overlay(dir, opts)
	if err != nil {
		return nil, err
	}
	objs, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	return objs, nil
}

// Parse decodes a multi-document YAML (or JSON) stream into objects,
// leaving out empty documents.
func Parse(manifests []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding document %d of the manifests: %w", i, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		// Through the API machinery's JSON reader, so that numbers are
		// int64 or float64 as the API server reads them.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decoding document %d of the manifests: %w", i, err)
		}
		out = append(out, u)
	}
}

// hasKustomization says what is wrong when dir is no kustomization.
func hasKustomization(dir, abs string) error {
	st, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("render %s: no such overlay directory (%w); name a directory of config/ such as config/default", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("render %s: not a directory; name a directory of config/ such as config/default", dir)
	}
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(abs, name)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("render %s: the directory has no kustomization.yaml; name a directory of config/ such as config/default", dir)
}

// Image is one kustomize images entry.
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// ImageEntry is the kustomize images entry that replaces the image name
// with ref, parsed as docker reads it (hack/imageref). A reference with
// neither tag nor digest means :latest, as for docker pull and the
// kubelet; it is written out because kustomize would otherwise keep the
// overlay's tag.
func ImageEntry(name, ref string) (Image, error) {
	r, err := imageref.Parse(ref)
	if err != nil {
		return Image{}, err
	}
	img := Image{Name: name, NewName: r.Name, NewTag: r.Tag, Digest: r.Digest}
	if r.Tag == "" && r.Digest == "" {
		img.NewTag = "latest"
	}
	return img, nil
}

// imageEntries turns the images of opts into kustomize images entries.
func imageEntries(opts Options) ([]Image, error) {
	var out []Image
	for _, in := range []struct{ option, ref, name string }{
		{"WebhookImage", opts.WebhookImage, WebhookRepository},
		{"AgentImage", opts.AgentImage, AgentRepository},
	} {
		if in.ref == "" {
			continue
		}
		img, err := ImageEntry(in.name, in.ref)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.option, err)
		}
		out = append(out, img)
	}
	return out, nil
}

// refusePlaceholders fails when the manifests run an image with the
// placeholder tag, naming the images to set.
func refusePlaceholders(dir string, manifests []byte) error {
	var missing []string
	for _, in := range []struct{ option, repo, what string }{
		{"WebhookImage", WebhookRepository, "pipeguard"},
		{"AgentImage", AgentRepository, "pipeguard-agent"},
	} {
		if bytes.Contains(manifests, []byte("image: "+in.repo+":"+PlaceholderTag)) {
			missing = append(missing, fmt.Sprintf("%s runs the placeholder %s image %s:%s: no %s image is published; build and push one and set %s",
				dir, in.what, in.repo, PlaceholderTag, in.what, in.option))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("render %s", strings.Join(missing, "; "))
	}
	return nil
}
