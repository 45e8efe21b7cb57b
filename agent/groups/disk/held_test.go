package disk

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	diskv1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	diskv1beta2 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1beta2"

	"github.com/pipeguard/pipeguard/agent/apierr"
	hostdisk "github.com/pipeguard/pipeguard/agent/hostops/disk"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// slowDisks is a disk host whose SetDiskState and PartitionDisk of disk 2
// answer their deadline when the test says, while the provider goes on:
// disk 2 reads online once the test says so. Other disks answer at once.
type slowDisks struct {
	hostdisk.API // nil: the calls the tests do not make
	started      chan string
	deadline     chan struct{}
	mu           sync.Mutex
	online       bool
	calls        []string
}

func (d *slowDisks) call(op string, disk uint32) error {
	d.mu.Lock()
	d.calls = append(d.calls, op)
	d.mu.Unlock()
	d.started <- op
	if disk != 2 {
		return nil
	}
	<-d.deadline
	return &limits.DeadlineError{Group: "disk", Op: op, Timeout: 90 * time.Second, Setting: "--host-call-timeout-disk"}
}

func (d *slowDisks) SetDiskState(ctx context.Context, disk uint32, online bool) error {
	return d.call("SetDiskState", disk)
}

func (d *slowDisks) PartitionDisk(ctx context.Context, disk uint32) error {
	return d.call("PartitionDisk", disk)
}

func (d *slowDisks) GetDiskState(ctx context.Context, disk uint32) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, "GetDiskState")
	return d.online, nil
}

func (d *slowDisks) ran() string { d.mu.Lock(); defer d.mu.Unlock(); return strings.Join(d.calls, " ") }

const diskPending = " is still running (its deadline passed; the storage provider may still be working), retry later"

// A SetDiskState past its deadline holds its disk, for every version's
// methods that change it, until GetDiskState answers the state asked for;
// GetDiskState itself and other disks are never held up.
func TestSetDiskStatePastItsDeadlineHoldsTheDisk(t *testing.T) {
	host := &slowDisks{started: make(chan string, 10), deadline: make(chan struct{})}
	s, err := New(host)
	if err != nil {
		t.Fatal(err)
	}
	v1 := serverV1{s}
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := v1.SetDiskState(ctx, &diskv1.SetDiskStateRequest{DiskNumber: 2, IsOnline: true})
		first <- err
	}()
	<-host.started
	_, err = v1.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 2})
	wantRefused(t, err, "disk PartitionDisk of disk 2 is refused: SetDiskState of this disk started ", " is still running, retry later")
	if _, err := v1.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 3}); err != nil {
		t.Fatalf("PartitionDisk of disk 3: %v", err)
	}
	<-host.started
	close(host.deadline)
	if err := <-first; err == nil || apierr.Code(err).String() != "DeadlineExceeded" {
		t.Fatalf("first SetDiskState = %v, want its deadline", err)
	}

	_, err = v1.SetDiskState(ctx, &diskv1.SetDiskStateRequest{DiskNumber: 2, IsOnline: true})
	wantRefused(t, err, "disk SetDiskState of disk 2 is refused: SetDiskState of this disk started ", diskPending)
	_, err = serverV1beta2{s}.PartitionDisk(ctx, &diskv1beta2.PartitionDiskRequest{DiskID: "2"})
	wantRefused(t, err, "disk PartitionDisk of disk 2 is refused: SetDiskState of this disk started ", diskPending)
	if _, err := v1.GetDiskState(ctx, &diskv1.GetDiskStateRequest{DiskNumber: 2}); err != nil {
		t.Fatalf("GetDiskState, a read, was refused: %v", err)
	}
	host.mu.Lock()
	host.online = true
	host.mu.Unlock()
	go func() {
		_, err := v1.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 2})
		first <- err
	}()
	<-host.started
	if got, want := host.ran(), "SetDiskState PartitionDisk GetDiskState GetDiskState GetDiskState GetDiskState PartitionDisk"; got != want {
		t.Fatalf("host calls %q, want %q", got, want)
	}
	<-first
}

// Without a volume lister, a PartitionDisk past its deadline holds its
// disk for the settle time, running no check.
func TestPartitionDiskPastItsDeadlineHoldsTheDisk(t *testing.T) {
	host := &slowDisks{started: make(chan string, 10), deadline: make(chan struct{})}
	close(host.deadline)
	s, err := New(host)
	if err != nil {
		t.Fatal(err)
	}
	v1 := serverV1{s}
	ctx := context.Background()
	if _, err := v1.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 2}); apierr.Code(err).String() != "DeadlineExceeded" {
		t.Fatalf("PartitionDisk = %v, want its deadline", err)
	}
	_, err = v1.SetDiskState(ctx, &diskv1.SetDiskStateRequest{DiskNumber: 2, IsOnline: true})
	wantRefused(t, err, "disk SetDiskState of disk 2 is refused: PartitionDisk of this disk started ", diskPending)
	if got := host.ran(); got != "PartitionDisk" {
		t.Fatalf("host calls %q, want the first PartitionDisk only", got)
	}
}

// volumesOf is a volume lister whose disk 2 has the volumes the test
// gives it.
type volumesOf struct {
	mu   sync.Mutex
	ids  []string
	asks int
}

func (v *volumesOf) ListVolumesOnDisk(ctx context.Context, disk, partition uint32) ([]string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.asks++
	if disk != 2 || partition != 0 {
		return nil, nil
	}
	return v.ids, nil
}

// With the volume lister, a PartitionDisk past its deadline holds its disk
// until the disk has a volume.
func TestPartitionDiskPastItsDeadlineHoldsTheDiskUntilItHasAVolume(t *testing.T) {
	host := &slowDisks{started: make(chan string, 10), deadline: make(chan struct{})}
	close(host.deadline)
	vols := &volumesOf{}
	s, err := New(host)
	if err != nil {
		t.Fatal(err)
	}
	v1 := serverV1{s.WithVolumes(vols)}
	ctx := context.Background()
	if _, err := v1.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 2}); apierr.Code(err).String() != "DeadlineExceeded" {
		t.Fatalf("PartitionDisk = %v, want its deadline", err)
	}
	<-host.started
	_, err = v1.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 2})
	wantRefused(t, err, "disk PartitionDisk of disk 2 is refused: PartitionDisk of this disk started ", diskPending)
	vols.mu.Lock()
	vols.ids = []string{`\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`}
	vols.mu.Unlock()
	if _, err := v1.SetDiskState(ctx, &diskv1.SetDiskStateRequest{DiskNumber: 3, IsOnline: true}); err != nil {
		t.Fatalf("SetDiskState of disk 3: %v", err)
	}
	<-host.started
	if _, err := v1.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 2}); apierr.Code(err).String() != "DeadlineExceeded" {
		t.Fatalf("PartitionDisk once the disk has a volume = %v, want it run (and answer its deadline)", err)
	}
	<-host.started
	if got := host.ran(); got != "PartitionDisk SetDiskState PartitionDisk" {
		t.Fatalf("host calls %q", got)
	}
	if vols.asks != 2 {
		t.Fatalf("the volumes were listed %d times, want 2 (one per request after the deadline)", vols.asks)
	}
}

func wantRefused(t *testing.T, err error, prefix, suffix string) {
	t.Helper()
	if err == nil || apierr.Code(err).String() != "Aborted" || !strings.HasPrefix(err.Error(), prefix) || !strings.HasSuffix(err.Error(), suffix) {
		t.Fatalf("got %v, want Aborted %q...%q", err, prefix, suffix)
	}
}
