//go:build windows

package compare

import (
	diskv1 "github.com/kubernetes-csi/csi-proxy/client/groups/disk/v1"
	filesystemv1 "github.com/kubernetes-csi/csi-proxy/client/groups/filesystem/v1"
	systemv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/groups/system/v1alpha1"
	volumev1 "github.com/kubernetes-csi/csi-proxy/client/groups/volume/v1"
)

// DialCSIProxy opens CSI Proxy's pipes under prefix with its client
// library; an *UnreachableError names the first pipe that is not there.
func DialCSIProxy(prefix string) (Conns, error) {
	var closers []func() error
	c := Conns{Close: func() {
		for _, f := range closers {
			_ = f()
		}
	}}
	fail := func(group string, err error) (Conns, error) {
		c.close()
		return Conns{}, &UnreachableError{Pipe: PipePath(prefix, group), Err: err}
	}
	disk, err := diskv1.NewClientWithPipePath(PipePath(prefix, "disk"))
	if err != nil {
		return fail("disk", err)
	}
	closers = append(closers, disk.Close)
	vol, err := volumev1.NewClientWithPipePath(PipePath(prefix, "volume"))
	if err != nil {
		return fail("volume", err)
	}
	closers = append(closers, vol.Close)
	fs, err := filesystemv1.NewClientWithPipePath(PipePath(prefix, "filesystem"))
	if err != nil {
		return fail("filesystem", err)
	}
	closers = append(closers, fs.Close)
	sys, err := systemv1alpha1.NewClientWithPipePath(PipePath(prefix, "system"))
	if err != nil {
		return fail("system", err)
	}
	closers = append(closers, sys.Close)
	c.Disk, c.Volume, c.Filesystem, c.System = disk, vol, fs, sys
	return c, nil
}
