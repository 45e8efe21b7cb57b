package identity

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type fakeWin struct {
	pidErr, openErr, clientErr, procErr error
	closed                              int
}

func (f *fakeWin) ClientProcessID(uintptr) (uint32, error) { return 4242, f.pidErr }
func (f *fakeWin) OpenProcess(uint32) (uintptr, error)     { return 7, f.openErr }
func (f *fakeWin) CloseProcess(uintptr)                    { f.closed++ }
func (f *fakeWin) ProcessStart(uintptr) (time.Time, error) {
	return time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC), nil
}
func (f *fakeWin) ClientSID(uintptr) (string, error) {
	if f.clientErr != nil {
		return "", f.clientErr
	}
	return "S-1-5-93-2-1", nil
}
func (f *fakeWin) ProcessSID(uintptr) (string, error) {
	if f.procErr != nil {
		return "", f.procErr
	}
	return "S-1-5-18", nil
}

func TestWindowsCaller(t *testing.T) {
	cases := map[string]struct {
		api                  *fakeWin
		wantErr              string
		wantSID, wantSource  string
		wantNote, wantUser   string
		wantClosedAfterError bool
	}{
		"identification level client": {
			api: &fakeWin{}, wantSID: "S-1-5-93-2-1", wantSource: "client-token", wantUser: "pipeguard:peer:sid:S-1-5-93-2-1",
			wantNote: "no CRI endpoint is configured (CRIOptions.Endpoint), so Windows processes are not mapped to containers and pods",
		},
		"anonymous client falls back to the process token, and says so": {
			api: &fakeWin{clientErr: ErrAnonymous}, wantSID: "S-1-5-18", wantSource: "process-token", wantUser: "pipeguard:peer:sid:S-1-5-18",
			wantNote: "anonymous impersonation level",
		},
		"no token readable": {
			api:      &fakeWin{clientErr: ErrAnonymous, procErr: errors.New("access denied")},
			wantUser: "pipeguard:peer:unknown", wantNote: "process token could not be read (access denied): no SID",
		},
		"pid unavailable refuses the connection": {
			api: &fakeWin{pidErr: errors.New("invalid handle")}, wantErr: "GetNamedPipeClientProcessId: invalid handle",
		},
		"process already gone refuses the connection": {
			api: &fakeWin{openErr: errors.New("invalid parameter")}, wantErr: "opening client process 4242: invalid parameter",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, release, err := windowsCaller(tc.api, 1)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PID != 4242 || c.SID != tc.wantSID || c.SIDSource != tc.wantSource || c.Username() != tc.wantUser ||
				c.ProcessStart != "2025-03-01T08:00:00Z" || !strings.Contains(strings.Join(c.Notes, "; "), tc.wantNote) {
				t.Fatalf("caller %+v (user %s)", c, c.Username())
			}
			if tc.api.closed != 0 {
				t.Fatal("process handle closed before the connection")
			}
			release()
			if tc.api.closed != 1 {
				t.Fatal("process handle not released with the connection")
			}
		})
	}
}
