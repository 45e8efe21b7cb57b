// Package imageref parses container image references (registry/name:tag@digest)
// the way docker, containerd and the kubelet read them, so that `make render`
// and `make deploy` turn IMG and AGENT_IMG into kustomize images entries
// without cutting a registry port for a tag. It serves those tools
// (hack/render, hack/kustomization), no pipeguard binary, so it lives in
// hack/ beside them.
package imageref

import (
	"fmt"
	"regexp"
	"strings"
)

// Reference is one parsed image reference.
type Reference struct {
	// Name is the repository with its registry, if any:
	// "localhost:5000/pipeguard", "ghcr.io/pipeguard/pipeguard", "pipeguard".
	Name string
	// Tag is the tag, or empty.
	Tag string
	// Digest is "algorithm:hex", or empty.
	Digest string
}

// String writes the reference back: name[:tag][@digest].
func (r Reference) String() string {
	s := r.Name
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// maxNameLength is the limit registries put on a repository name,
// registry included.
const maxNameLength = 255

var (
	// A registry host: DNS labels joined by dots, an IPv4 address, or a
	// bracketed IPv6 address; then an optional port.
	domainRE = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	// One path component: lowercase alphanumerics, with ".", "_", "__" or
	// runs of "-" between them.
	componentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tagRE       = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	algorithmRE = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*$`)
	hexRE       = regexp.MustCompile(`^[a-f0-9]{32,}$`)
)

// digestLengths are the hex lengths of the digest algorithms registries use.
var digestLengths = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// Parse reads name[:tag][@digest]. The first path component is the
// registry when it has a "." or ":" or is "localhost", as docker decides;
// a ":" after the last "/" starts the tag. Every error says which part of
// ref is wrong and what a valid reference looks like.
func Parse(ref string) (Reference, error) {
	if ref == "" {
		return Reference{}, fmt.Errorf("the image reference is empty; give one such as registry.example.com/pipeguard:v1.0.0")
	}
	if strings.TrimSpace(ref) != ref || strings.ContainsAny(ref, " \t\r\n") {
		return Reference{}, fmt.Errorf("image reference %q contains white space", ref)
	}
	var r Reference
	rest := ref
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		r.Digest = rest[i+1:]
		rest = rest[:i]
		if err := checkDigest(r.Digest); err != nil {
			return Reference{}, fmt.Errorf("image reference %q: %w", ref, err)
		}
	}
	// A tag is a ":" after the last "/": the ":" of "localhost:5000/name"
	// is the registry's port.
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && i > strings.LastIndexByte(rest, '/') {
		r.Tag = rest[i+1:]
		rest = rest[:i]
		if !tagRE.MatchString(r.Tag) {
			return Reference{}, fmt.Errorf("image reference %q: tag %q is not valid: a tag is 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'", ref, r.Tag)
		}
	}
	if err := checkName(rest); err != nil {
		return Reference{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	r.Name = rest
	return r, nil
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("the repository name is empty")
	}
	if len(name) > maxNameLength {
		return fmt.Errorf("the repository name is %d characters long, more than %d", len(name), maxNameLength)
	}
	path := name
	if domain, remote, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(domain, ".:") || domain == "localhost") {
		if !domainRE.MatchString(domain) {
			return fmt.Errorf("registry %q is not a host name or address with an optional port, such as registry.example.com or localhost:5000", domain)
		}
		path = remote
	}
	for _, c := range strings.Split(path, "/") {
		switch {
		case c == "":
			return fmt.Errorf("repository %q has an empty path component (a leading, trailing or doubled '/')", path)
		case strings.ToLower(c) != c && componentRE.MatchString(strings.ToLower(c)):
			return fmt.Errorf("repository %q must be lowercase: write %q", path, strings.ToLower(path))
		case !componentRE.MatchString(c):
			return fmt.Errorf("repository path component %q is not valid: use lowercase letters and digits, separated by '.', '_', '__' or '-'", c)
		}
	}
	return nil
}

func checkDigest(d string) error {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok || !algorithmRE.MatchString(alg) || !hexRE.MatchString(hex) {
		return fmt.Errorf("digest %q is not valid: write it as sha256: followed by 64 lowercase hex digits", d)
	}
	if want, known := digestLengths[alg]; known && len(hex) != want {
		return fmt.Errorf("digest %q is not valid: a %s digest has %d hex digits, not %d", d, alg, want, len(hex))
	}
	return nil
}
