package volume

import (
	"testing"

	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
)

// nativeHost returns the native volume operations over d (hostvol.New),
// failing t when they lack a dependency.
func nativeHost(t testing.TB, d hostvol.Deps) hostvol.Native {
	t.Helper()
	n, err := hostvol.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
