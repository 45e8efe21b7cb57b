package identity

import (
	"net"
	"slices"
	"testing"
)

// TestNotesNameTheOptions: a Windows caller's note names the CRI endpoint
// by its Go name, and by the command's flag through WithNamer, around
// WithCRI too; other notes are left as they are.
func TestNotesNameTheOptions(t *testing.T) {
	const library = "no CRI endpoint is configured (CRIOptions.Endpoint), so Windows processes are not mapped to containers and pods: pod fields stay empty"
	const command = "no CRI endpoint is configured (--cri-endpoint), so Windows processes are not mapped to containers and pods: pod fields stay empty"
	if got := NoteNoCRI.String(); got != library {
		t.Errorf("NoteNoCRI = %q, want %q", got, library)
	}
	flags := func(key string) (string, bool) {
		f, ok := map[string]string{OptionCRIEndpoint: "--cri-endpoint"}[key]
		return f, ok
	}
	windows := func(net.Conn) (*Caller, func(), error) {
		api := &fakeWin{clientErr: ErrAnonymous}
		return windowsCaller(api, 1)
	}
	cases := map[string]struct {
		peer PeerFunc
		want string
	}{
		"the library's own words": {peer: windows, want: library},
		"named by the command":    {peer: WithNamer(windows, flags), want: command},
		"no namer":                {peer: WithNamer(windows, nil), want: library},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, release, err := tc.peer(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			if !slices.Contains(c.Notes, tc.want) {
				t.Errorf("notes %q, want %q", c.Notes, tc.want)
			}
			if !slices.Contains(c.Notes, "the client dialed at anonymous impersonation level, so its pipe token names no user; the SID is its process token's") {
				t.Errorf("notes %q: the other note changed", c.Notes)
			}
		})
	}
}
