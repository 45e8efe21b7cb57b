// Package version reports which build of pipeguard is running: the release
// version set at link time and the VCS revision the Go toolchain records.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is the release version. Release builds set it with
// -ldflags "-X github.com/pipeguard/pipeguard/internal/version.Version=v1.2.3".
var Version = ""

// Info describes one build.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build information of the running binary. Fields the build
// did not record read "unknown" (revision) or the module version (version).
func Get() Info {
	info := Info{
		Version:   Version,
		Revision:  "unknown",
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	return info
}

// String is the one-line form printed by --version: the binary name, version,
// revision (with "-dirty" when built from a modified tree), Go version and platform.
func (i Info) String() string {
	rev := i.Revision
	if i.Modified {
		rev += "-dirty"
	}
	return fmt.Sprintf("%s (revision %s, %s, %s)", i.Version, rev, i.GoVersion, i.Platform)
}

// Collector returns the gauge pipeguard_build_info{version,revision,goversion},
// always 1, which says on /metrics which build serves.
func Collector() prometheus.Collector {
	i := Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pipeguard_build_info",
		Help: "Always 1; its labels name the running build: version, VCS revision and Go version.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(i.Version, i.Revision, i.GoVersion).Set(1)
	return g
}
