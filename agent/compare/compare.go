package compare

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	diskapi "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	fsapi "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	sysapi "github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1"
	volapi "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	"google.golang.org/grpc"

	"github.com/pipeguard/pipeguard/internal/option"
)

// DefaultTimeout is the deadline of each call when Options.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// DefaultServices are the Windows services GetService is asked about when
// Options.Services is empty: those CSI drivers look at (the SMB client, the
// iSCSI initiator) and CSI Proxy's own service, csiproxy.
var DefaultServices = []string{"csiproxy", "LanmanWorkstation", "MSiSCSI"}

// Options configure a comparison.
type Options struct {
	// Timeout is the deadline of each call on each side; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// KubeletPath is asked about with PathExists.
	KubeletPath string
	// TargetPaths are asked about with GetVolumeIDFromTargetPath (see
	// FindMountPoints).
	TargetPaths []string
	// Services are asked about with GetService; empty means
	// DefaultServices.
	Services []string
	// Namer names the options the report names (Options.Timeout) as the
	// command does (its flags); nil keeps their Go names.
	Namer option.Namer
}

// OptionTimeout is the key of Options.Timeout, which the report names
// (see package option).
const OptionTimeout = "compare.timeout"

var timeoutOption = option.Name{Key: OptionTimeout, Field: "Options.Timeout"}

// Row is one call, made on both sides with the same request.
type Row struct {
	// RPC is group.Method.
	RPC string `json:"rpc"`
	// Request names what was asked about; empty for a call without one.
	Request   string `json:"request,omitempty"`
	Same      bool   `json:"same"`
	CSIProxy  string `json:"csiProxy"`
	Pipeguard string `json:"pipeguard"`
	// Differences say how pipeguard's answer differs from CSI Proxy's.
	Differences []string `json:"differences,omitempty"`
}

// Report is the outcome of a comparison.
type Report struct {
	// Identical is set when no call differs.
	Identical bool  `json:"identical"`
	Calls     int   `json:"calls"`
	Differ    int   `json:"differ"`
	Rows      []Row `json:"results"`
	// Notes say what was not compared, and which bounds were reached.
	Notes []string `json:"notes,omitempty"`
	// Unreachable names the calls CSI Proxy answered Unavailable: it
	// could not be reached.
	Unreachable []string `json:"unreachable,omitempty"`
}

// run holds a comparison under way.
type run struct {
	ctx     context.Context
	timeout time.Duration
	csi, pg Conns
	report  Report
	// timeouts counts CSI Proxy's unanswered calls in a row.
	timeouts int
	// noAnswer is the error of a call not answered within timeout.
	noAnswer string
}

// Compare asks csi (CSI Proxy) and pg (pipeguard) the same read-only
// questions, CSI Proxy first each time, and reports the differences.
func Compare(ctx context.Context, csi, pg Conns, o Options) Report {
	r := &run{ctx: ctx, timeout: o.Timeout, csi: csi, pg: pg}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	r.noAnswer = option.Sprintf("no answer within %s (%s)", r.timeout, timeoutOption).Render(o.Namer)
	disks := r.disks()
	volumes := r.volumesOn(disks)
	r.volumes(volumes)
	r.targetPaths(o.TargetPaths)
	r.filesystem(o.KubeletPath)
	services := o.Services
	if len(services) == 0 {
		services = DefaultServices
	}
	r.system(services)
	for _, g := range slices.Sorted(mapKeys(Unread)) {
		r.report.Notes = append(r.report.Notes, g+": "+Unread[g])
	}
	r.report.Calls = len(r.report.Rows)
	r.report.Identical = r.report.Differ == 0 && len(r.report.Unreachable) == 0
	return r.report
}

// both asks each side, then records the row.
func (r *run) both(rpc, request string, ask func(c Conns) answer, tolerate near) (csi, pg answer) {
	if r.timeouts >= MaxTimeouts {
		csi = answer{err: fmt.Sprintf("not asked: CSI Proxy left %d calls in a row unanswered", MaxTimeouts), unavailable: true}
	} else if csi = ask(r.csi); csi.timedOut {
		r.timeouts++
		if r.timeouts == MaxTimeouts {
			r.report.Notes = append(r.report.Notes, fmt.Sprintf("CSI Proxy stopped answering: %d calls in a row had no answer within %s; it was asked nothing more", MaxTimeouts, r.timeout))
		}
	} else {
		r.timeouts = 0
	}
	pg = ask(r.pg)
	for _, a := range []*answer{&csi, &pg} {
		if a.timedOut {
			a.err = r.noAnswer
		}
	}
	row := Row{RPC: rpc, Request: clean(request), CSIProxy: csi.String(), Pipeguard: pg.String(), Differences: diff(csi, pg, tolerate)}
	row.Same = len(row.Differences) == 0
	if !row.Same {
		r.report.Differ++
	}
	if csi.unavailable {
		r.report.Unreachable = append(r.report.Unreachable, strings.TrimSpace(rpc+" "+row.Request))
	}
	r.report.Rows = append(r.report.Rows, row)
	return csi, pg
}

func diskKey(n uint32) string { return "disk " + strconv.FormatUint(uint64(n), 10) }

// disks compares the two disk lists and each disk's size, and returns the
// disks either side lists.
func (r *run) disks() []uint32 {
	seen := map[uint32]bool{}
	note := func(ns []uint32) {
		for _, n := range ns {
			seen[n] = true
		}
	}
	locs := func(c Conns) answer {
		return ask(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*diskapi.ListDiskLocationsResponse, error) {
			return c.Disk.ListDiskLocations(ctx, &diskapi.ListDiskLocationsRequest{}, opts...)
		}, func(resp *diskapi.ListDiskLocationsResponse) (map[string]string, error) {
			m := resp.GetDiskLocations()
			if len(m) > MaxItems {
				return nil, tooMany(len(m))
			}
			f := map[string]string{}
			var ns []uint32
			for n, l := range m {
				f[diskKey(n)] = fmt.Sprintf("adapter %s, bus %s, target %s, LUN %s", shown(l.GetAdapter()), shown(l.GetBus()), shown(l.GetTarget()), shown(l.GetLUNID()))
				ns = append(ns, n)
			}
			note(ns)
			return f, nil
		})
	}
	r.both("disk.ListDiskLocations", "", locs, nil)
	ids := func(c Conns) answer {
		return ask(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*diskapi.ListDiskIDsResponse, error) {
			return c.Disk.ListDiskIDs(ctx, &diskapi.ListDiskIDsRequest{}, opts...)
		}, func(resp *diskapi.ListDiskIDsResponse) (map[string]string, error) {
			m := resp.GetDiskIDs()
			if len(m) > MaxItems {
				return nil, tooMany(len(m))
			}
			f := map[string]string{}
			var ns []uint32
			for n, id := range m {
				f[diskKey(n)+" page83"] = id.GetPage83()
				f[diskKey(n)+" serialNumber"] = id.GetSerialNumber()
				ns = append(ns, n)
			}
			note(ns)
			return f, nil
		})
	}
	r.both("disk.ListDiskIDs", "", ids, nil)
	disks := slices.Sorted(func(yield func(uint32) bool) {
		for n := range seen {
			if !yield(n) {
				return
			}
		}
	})
	if len(disks) > MaxDisks {
		r.report.Notes = append(r.report.Notes, fmt.Sprintf("the sides list %d disks; only the first %d (by number) were asked about one by one", len(disks), MaxDisks))
		disks = disks[:MaxDisks]
	}
	for _, n := range disks {
		r.both("disk.GetDiskStats", diskKey(n), func(c Conns) answer {
			return ask(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*diskapi.GetDiskStatsResponse, error) {
				return c.Disk.GetDiskStats(ctx, &diskapi.GetDiskStatsRequest{DiskNumber: n}, opts...)
			}, func(resp *diskapi.GetDiskStatsResponse) (map[string]string, error) {
				return map[string]string{"totalBytes": strconv.FormatInt(resp.GetTotalBytes(), 10)}, nil
			})
		}, nil)
	}
	return disks
}

// volumesOn compares the volumes on each disk and returns the volumes
// either side lists.
func (r *run) volumesOn(disks []uint32) []string {
	seen := map[string]bool{}
	for _, n := range disks {
		r.both("volume.ListVolumesOnDisk", diskKey(n), func(c Conns) answer {
			return askList(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*volapi.ListVolumesOnDiskResponse, error) {
				return c.Volume.ListVolumesOnDisk(ctx, &volapi.ListVolumesOnDiskRequest{DiskNumber: n}, opts...)
			}, func(resp *volapi.ListVolumesOnDiskResponse) (map[string]string, error) {
				ids := resp.GetVolumeIds()
				if len(ids) > MaxItems {
					return nil, tooMany(len(ids))
				}
				f := map[string]string{}
				for _, id := range ids {
					f[clean(id)] = ""
					if len(id) <= MaxValue {
						seen[id] = true
					}
				}
				return f, nil
			}, true)
		}, nil)
	}
	volumes := slices.Sorted(func(yield func(string) bool) {
		for v := range seen {
			if !yield(v) {
				return
			}
		}
	})
	if len(volumes) > MaxVolumes {
		r.report.Notes = append(r.report.Notes, fmt.Sprintf("the sides list %d volumes; only the first %d (by ID) were asked about one by one", len(volumes), MaxVolumes))
		volumes = volumes[:MaxVolumes]
	}
	return volumes
}

// volumes compares, for each volume, whether it is formatted and its stats.
func (r *run) volumes(volumes []string) {
	for _, id := range volumes {
		r.both("volume.IsVolumeFormatted", id, func(c Conns) answer {
			return ask(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*volapi.IsVolumeFormattedResponse, error) {
				return c.Volume.IsVolumeFormatted(ctx, &volapi.IsVolumeFormattedRequest{VolumeId: id}, opts...)
			}, func(resp *volapi.IsVolumeFormattedResponse) (map[string]string, error) {
				return map[string]string{"formatted": strconv.FormatBool(resp.GetFormatted())}, nil
			})
		}, nil)
		r.both("volume.GetVolumeStats", id, func(c Conns) answer {
			return ask(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*volapi.GetVolumeStatsResponse, error) {
				return c.Volume.GetVolumeStats(ctx, &volapi.GetVolumeStatsRequest{VolumeId: id}, opts...)
			}, func(resp *volapi.GetVolumeStatsResponse) (map[string]string, error) {
				return map[string]string{
					"totalBytes": strconv.FormatInt(resp.GetTotalBytes(), 10),
					"usedBytes":  strconv.FormatInt(resp.GetUsedBytes(), 10),
				}, nil
			})
		}, usedBytesNear)
	}
}

// targetPaths compares the volume mounted at each target path.
func (r *run) targetPaths(paths []string) {
	for _, p := range paths {
		r.both("volume.GetVolumeIDFromTargetPath", p, func(c Conns) answer {
			return ask(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*volapi.GetVolumeIDFromTargetPathResponse, error) {
				return c.Volume.GetVolumeIDFromTargetPath(ctx, &volapi.GetVolumeIDFromTargetPathRequest{TargetPath: p}, opts...)
			}, func(resp *volapi.GetVolumeIDFromTargetPathResponse) (map[string]string, error) {
				return map[string]string{"volumeId": resp.GetVolumeId()}, nil
			})
		}, nil)
	}
}

// filesystem compares whether the kubelet directory exists.
func (r *run) filesystem(kubelet string) {
	if kubelet == "" {
		return
	}
	r.both("filesystem.PathExists", kubelet, func(c Conns) answer {
		return ask(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*fsapi.PathExistsResponse, error) {
			return c.Filesystem.PathExists(ctx, &fsapi.PathExistsRequest{Path: kubelet}, opts...)
		}, func(resp *fsapi.PathExistsResponse) (map[string]string, error) {
			return map[string]string{"exists": strconv.FormatBool(resp.GetExists())}, nil
		})
	}, nil)
}

// system compares the BIOS serial number and each service's state.
func (r *run) system(services []string) {
	r.both("system.GetBIOSSerialNumber", "", func(c Conns) answer {
		return ask(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*sysapi.GetBIOSSerialNumberResponse, error) {
			return c.System.GetBIOSSerialNumber(ctx, &sysapi.GetBIOSSerialNumberRequest{}, opts...)
		}, func(resp *sysapi.GetBIOSSerialNumberResponse) (map[string]string, error) {
			return map[string]string{"serialNumber": resp.GetSerialNumber()}, nil
		})
	}, nil)
	for _, name := range services {
		r.both("system.GetService", name, func(c Conns) answer {
			return ask(r.ctx, r.timeout, func(ctx context.Context, opts ...grpc.CallOption) (*sysapi.GetServiceResponse, error) {
				return c.System.GetService(ctx, &sysapi.GetServiceRequest{Name: name}, opts...)
			}, func(resp *sysapi.GetServiceResponse) (map[string]string, error) {
				return map[string]string{
					"displayName": resp.GetDisplayName(),
					"startType":   resp.GetStartType().String(),
					"status":      resp.GetStatus().String(),
				}, nil
			})
		}, nil)
	}
}
