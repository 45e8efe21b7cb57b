package imageref

import (
	"strings"
	"testing"
)

const (
	sha  = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	sha5 = "sha512:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestParse(t *testing.T) {
	tests := map[string]struct {
		ref  string
		want Reference
	}{
		"name":                          {"pipeguard", Reference{Name: "pipeguard"}},
		"name:tag":                      {"pipeguard:v1", Reference{Name: "pipeguard", Tag: "v1"}},
		"path/name":                     {"pipeguard/pipeguard", Reference{Name: "pipeguard/pipeguard"}},
		"registry/name":                 {"registry.example.com/pipeguard", Reference{Name: "registry.example.com/pipeguard"}},
		"registry:port/name":            {"registry:5000/pipeguard", Reference{Name: "registry:5000/pipeguard"}},
		"registry:port/name:tag":        {"registry:5000/pipeguard:v1", Reference{Name: "registry:5000/pipeguard", Tag: "v1"}},
		"localhost:port/name:tag":       {"localhost:5000/pipeguard:v1", Reference{Name: "localhost:5000/pipeguard", Tag: "v1"}},
		"localhost/name":                {"localhost/pipeguard", Reference{Name: "localhost/pipeguard"}},
		"name@digest":                   {"pipeguard@" + sha, Reference{Name: "pipeguard", Digest: sha}},
		"name:tag@digest":               {"pipeguard:v1@" + sha, Reference{Name: "pipeguard", Tag: "v1", Digest: sha}},
		"registry:port/name:tag@digest": {"localhost:5000/pipeguard:v1@" + sha, Reference{Name: "localhost:5000/pipeguard", Tag: "v1", Digest: sha}},
		"registry:port/name@digest":     {"localhost:5000/pipeguard@" + sha, Reference{Name: "localhost:5000/pipeguard", Digest: sha}},
		"deep path":                     {"ghcr.io/pipeguard/pipeguard-agent:dev", Reference{Name: "ghcr.io/pipeguard/pipeguard-agent", Tag: "dev"}},
		"IPv4 registry":                 {"10.0.0.1:5000/pipeguard:v1", Reference{Name: "10.0.0.1:5000/pipeguard", Tag: "v1"}},
		"IPv6 registry":                 {"[::1]:5000/pipeguard:v1", Reference{Name: "[::1]:5000/pipeguard", Tag: "v1"}},
		"separators":                    {"a/b__c/d-e--f.g_h:1.0_rc-1", Reference{Name: "a/b__c/d-e--f.g_h", Tag: "1.0_rc-1"}},
		"sha512 digest":                 {"pipeguard@" + sha5, Reference{Name: "pipeguard", Digest: sha5}},
		"uppercase tag":                 {"pipeguard:V1", Reference{Name: "pipeguard", Tag: "V1"}},
		"uppercase registry host":       {"Registry.Example.com/pipeguard", Reference{Name: "Registry.Example.com/pipeguard"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.ref)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.ref, err)
			}
			if got != tc.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.ref, got, tc.want)
			}
			if got.String() != tc.ref {
				t.Errorf("String() = %q, want %q back", got.String(), tc.ref)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := map[string]struct {
		ref  string
		want string
	}{
		"empty":                {"", "the image reference is empty; give one such as registry.example.com/pipeguard:v1.0.0"},
		"uppercase repository": {"localhost:5000/PipeGuard:v1", `image reference "localhost:5000/PipeGuard:v1": repository "PipeGuard" must be lowercase: write "pipeguard"`},
		"uppercase name only":  {"Pipeguard", `image reference "Pipeguard": repository "Pipeguard" must be lowercase: write "pipeguard"`},
		"short digest":         {"pipeguard@sha256:abc", `image reference "pipeguard@sha256:abc": digest "sha256:abc" is not valid: write it as sha256: followed by 64 lowercase hex digits`},
		"sha256 of 65 digits":  {"pipeguard@" + sha + "0", `image reference "pipeguard@` + sha + `0": digest "` + sha + `0" is not valid: a sha256 digest has 64 hex digits, not 65`},
		"digest not hex":       {"pipeguard@sha256:" + strings.Repeat("g", 64), `digest "sha256:` + strings.Repeat("g", 64) + `" is not valid: write it as sha256: followed by 64 lowercase hex digits`},
		"uppercase digest":     {"pipeguard@" + strings.ToUpper(sha), `is not valid: write it as sha256: followed by 64 lowercase hex digits`},
		"digest without alg":   {"pipeguard@0123456789abcdef0123456789abcdef", `is not valid: write it as sha256: followed by 64 lowercase hex digits`},
		"empty digest":         {"pipeguard@", `digest "" is not valid`},
		"two digests":          {"pipeguard@" + sha + "@" + sha, `is not valid: write it as sha256: followed by 64 lowercase hex digits`},
		"empty tag":            {"pipeguard:", `image reference "pipeguard:": tag "" is not valid: a tag is 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'`},
		"tag starting with -":  {"pipeguard:-v1", `tag "-v1" is not valid`},
		"tag too long":         {"pipeguard:" + strings.Repeat("a", 129), `is not valid: a tag is 1 to 128 letters`},
		"tag with a slash":     {"pipeguard:v1/x", `registry "pipeguard:v1" is not a host name or address with an optional port`},
		"empty name":           {":v1", `image reference ":v1": the repository name is empty`},
		"only a digest":        {"@" + sha, `the repository name is empty`},
		"trailing slash":       {"registry.example.com/", `repository "" has an empty path component (a leading, trailing or doubled '/')`},
		"doubled slash":        {"registry.example.com//pipeguard", `has an empty path component`},
		"leading slash":        {"/pipeguard", `has an empty path component`},
		"bad port":             {"localhost:port/pipeguard", `registry "localhost:port" is not a host name or address with an optional port, such as registry.example.com or localhost:5000`},
		"bad host":             {"-registry.example.com/pipeguard", `registry "-registry.example.com" is not a host name or address`},
		"scheme":               {"https://registry.example.com/pipeguard", `registry "https:" is not a host name`},
		"separator at end":     {"pipeguard-:v1", `repository path component "pipeguard-" is not valid: use lowercase letters and digits, separated by '.', '_', '__' or '-'`},
		"triple underscore":    {"pipe___guard", `repository path component "pipe___guard" is not valid`},
		"white space":          {"pipeguard :v1", `image reference "pipeguard :v1" contains white space`},
		"newline":              {"pipeguard\n", `contains white space`},
		"quote (yaml breaker)": {`pipe"guard`, `repository path component "pipe\"guard" is not valid`},
		"too long":             {strings.Repeat("a", 256), `the repository name is 256 characters long, more than 255`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.ref)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error containing %q", tc.ref, got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) error:\n%s\nwant it to contain:\n%s", tc.ref, err, tc.want)
			}
		})
	}
}
