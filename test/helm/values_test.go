package helm_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestBadValuesAreRefused: values a confused user or a typo gives are
// refused before anything is rendered, with the value and what is allowed.
func TestBadValuesAreRefused(t *testing.T) {
	cases := map[string]struct {
		sets []string
		want []string
	}{
		"failurePolicy Maybe": {
			append(append([]string{}, imageSets...), "webhook.failurePolicy=Maybe"),
			[]string{"values don't meet the specifications of the schema(s) in the following chart(s):\npipeguard:\n- at '/webhook/failurePolicy': value must be one of 'Fail', 'Ignore'"},
		},
		"no image": {
			nil,
			[]string{"image.tag or image.digest must be set: no pipeguard image is published; build and push one, then install with --set image.repository=REGISTRY/pipeguard --set image.tag=TAG"},
		},
		"the placeholder image": {
			[]string{"image.tag=image-not-set"},
			[]string{"image.tag is the placeholder image-not-set, which can never be pulled: set image.tag or image.digest to an image you pushed"},
		},
		"the placeholder digest": {
			[]string{"image.repository=registry.example.com/pipeguard", "image.digest=sha256:0000000000000000000000000000000000000000000000000000000000000000"},
			[]string{"image.digest is the placeholder sha256:0000000000000000000000000000000000000000000000000000000000000000, which no image has: set image.tag or image.digest to an image you pushed"},
		},
		"agent without its image": {
			[]string{"image.tag=v0.1.0", "agent.enabled=true"},
			[]string{"agent.image.tag or agent.image.digest must be set: no pipeguard-agent image is published"},
		},
		"no replicas": {
			append(append([]string{}, imageSets...), "webhook.replicas=0"),
			[]string{"- at '/webhook/replicas': minimum: got 0, want 1"},
		},
		"a misspelt value": {
			append(append([]string{}, imageSets...), "webhook.replica=3"),
			[]string{"- at '/webhook': additional properties 'replica' not allowed"},
		},
		"a malformed digest": {
			[]string{"image.digest=sha256:nothex"},
			[]string{"- at '/image/digest': 'sha256:nothex' does not match pattern"},
		},
		"an unknown pull policy": {
			append(append([]string{}, imageSets...), "image.pullPolicy=Sometimes"),
			[]string{"- at '/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := template(t, tc.sets...)
			if err == nil {
				t.Fatalf("--set %s was accepted", strings.Join(tc.sets, ","))
			}
			t.Logf("--set %s:\n%v", strings.Join(tc.sets, ","), err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestFailurePolicyCheckedWithoutSchema: the template refuses a bad
// failurePolicy also when the schema is skipped (helm --skip-schema-validation).
func TestFailurePolicyCheckedWithoutSchema(t *testing.T) {
	c := loadChart(t)
	c.Schema = nil
	_, err := renderChart(t, c, append(append([]string{}, imageSets...), "webhook.failurePolicy=Maybe")...)
	want := `webhook.failurePolicy is "Maybe"; allowed values are Fail and Ignore`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one with %q", err, want)
	}
}

func mustYAML(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	b, err := yaml.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
