package smb

import (
	"testing"

	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
)

// nativeHost returns the native smb operations over d (hostsmb.New),
// failing t when they lack a dependency.
func nativeHost(t testing.TB, d hostsmb.Deps) hostsmb.Native {
	t.Helper()
	n, err := hostsmb.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
