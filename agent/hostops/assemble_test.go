package hostops_test

import (
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/disk"
	"github.com/pipeguard/pipeguard/agent/hostops/smb"
	"github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// Each group's New refuses, once, the native operations assembled without
// a Win32 host or without their WMI operations, naming what is
// missing; with both it builds them.
func TestNewRefusesMissingDependencies(t *testing.T) {
	const noSys = "a Win32 host (Deps.Sys)"
	conn := wmitest.New()
	groups := map[string]struct {
		noCmdlets string
		build     func(sys win32.Sys, cmdlets bool) error
	}{
		"disk": {"the WMI disk operations (Deps.Cmdlets, for PartitionDisk, Rescan, SetDiskState and GetDiskState)",
			func(sys win32.Sys, cmdlets bool) error {
				d := disk.Deps{Sys: sys}
				if cmdlets {
					d.Cmdlets = disk.WMI{Conn: conn}
				}
				_, err := disk.New(d)
				return err
			}},
		"volume": {"the WMI volume operations (Deps.Cmdlets, for FormatVolume and ResizeVolume)",
			func(sys win32.Sys, cmdlets bool) error {
				d := volume.Deps{Sys: sys}
				if cmdlets {
					d.Cmdlets = volume.WMI{Conn: conn}
				}
				_, err := volume.New(d)
				return err
			}},
		"smb": {"the WMI smb operations (Deps.Cmdlets, for IsMapped, NewGlobalMapping and RemoveGlobalMapping)",
			func(sys win32.Sys, cmdlets bool) error {
				d := smb.Deps{Sys: sys}
				if cmdlets {
					d.Cmdlets = smb.WMI{Conn: conn}
				}
				_, err := smb.New(d)
				return err
			}},
	}
	for group, g := range groups {
		prefix := "internal error: the native " + group + " operations were assembled without "
		for name, tc := range map[string]struct {
			sys     win32.Sys
			cmdlets bool
			want    string
		}{
			"no Sys":     {nil, true, prefix + noSys},
			"no Cmdlets": {win32test.New(), false, prefix + g.noCmdlets},
			"neither":    {nil, false, prefix + noSys + " and " + g.noCmdlets},
			"both":       {win32test.New(), true, ""},
		} {
			t.Run(group+"/"+name, func(t *testing.T) {
				err := g.build(tc.sys, tc.cmdlets)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("New with every dependency: %v", err)
					}
					return
				}
				if err == nil || err.Error() != tc.want {
					t.Fatalf("New: %v\nwant %q", err, tc.want)
				}
			})
		}
	}
}
