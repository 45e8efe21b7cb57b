package version

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector())
	i := Get()
	want := `# HELP pipeguard_build_info Always 1; its labels name the running build: version, VCS revision and Go version.
# TYPE pipeguard_build_info gauge
pipeguard_build_info{goversion="` + i.GoVersion + `",revision="` + i.Revision + `",version="` + i.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pipeguard_build_info"); err != nil {
		t.Fatal(err)
	}
}

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Revision: "abc123", Modified: true, GoVersion: "go1.26.8", Platform: "windows/amd64"}
	if got, want := i.String(), "v1.2.3 (revision abc123-dirty, go1.26.8, windows/amd64)"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if g := Get(); g.Version == "" || g.Revision == "" || g.GoVersion == "" {
		t.Fatalf("Get() left a field empty: %+v", g)
	}
}
