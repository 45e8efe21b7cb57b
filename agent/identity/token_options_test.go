package identity

import (
	"errors"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/pipeguard/pipeguard/internal/option"
)

// TestTokenOptionsErrorsNameTheOption checks that each missing option is
// named as the package's callers set it, and said to be that option, for
// a command to name its own way.
func TestTokenOptionsErrorsNameTheOption(t *testing.T) {
	reviewer := fake.NewClientset().AuthenticationV1().TokenReviews()
	cases := map[string]struct {
		o       TokenOptions
		want    string
		wantKey string
	}{
		"no reviewer":  {o: TokenOptions{Audience: "a", NodeName: "n"}, want: "token verification needs a Kubernetes client: set TokenOptions.Reviewer", wantKey: OptionTokenReviewer},
		"no audience":  {o: TokenOptions{Reviewer: reviewer, NodeName: "n"}, want: "token verification needs an audience: set TokenOptions.Audience", wantKey: OptionTokenAudience},
		"no node name": {o: TokenOptions{Reviewer: reviewer, Audience: "a"}, want: "token verification needs this node's name: set TokenOptions.NodeName", wantKey: OptionTokenNodeName},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewTokenVerifier(tc.o)
			var oe *option.Error
			if err == nil || err.Error() != tc.want || !errors.As(err, &oe) || oe.Options()[0].Key != tc.wantKey {
				t.Fatalf("error %#v, want %q naming %s", err, tc.want, tc.wantKey)
			}
			named := option.Message(err, func(key string) (string, bool) { return "--" + key, key == tc.wantKey })
			if want := tc.want[:len(tc.want)-len(oe.Options()[0].Field)] + "--" + tc.wantKey; named != want {
				t.Fatalf("named %q, want %q", named, want)
			}
		})
	}
}
