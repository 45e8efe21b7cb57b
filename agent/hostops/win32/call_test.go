package win32_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

func TestCallReturnsTheResult(t *testing.T) {
	l := limits.Bound("volume", limits.Limits{Timeout: time.Second, Concurrency: 1})
	got, err := win32.Call(context.Background(), l, "GetVolumeInformationW", func() (string, error) { return "NTFS", nil })
	if got != "NTFS" || err != nil {
		t.Fatalf("Call = %q, %v", got, err)
	}
	partial, err := win32.Call(context.Background(), nil, "DeviceIoControl", func() ([]byte, error) { return []byte{1}, win32.ErrBufferTooSmall })
	if len(partial) != 1 || !errors.Is(err, win32.ErrBufferTooSmall) {
		t.Fatalf("the result that comes with an error is lost: %v, %v", partial, err)
	}
}

// A call that answers after its deadline has its result dropped: the
// caller, answered at the deadline, never sees it (and the race detector
// sees no shared write).
func TestCallDropsALateResult(t *testing.T) {
	l := limits.Bound("volume", limits.Limits{Timeout: 50 * time.Millisecond, Concurrency: 1, Setting: "--host-call-timeout-volume"})
	release, returned := make(chan struct{}), make(chan struct{})
	start := time.Now()
	got, err := win32.Call(context.Background(), l, "GetDiskFreeSpaceExW", func() (uint64, error) {
		defer close(returned)
		<-release
		return 42, nil
	})
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("answered after %v", took)
	}
	if want := "volume GetDiskFreeSpaceExW did not finish within 50ms (host operation deadline; --host-call-timeout-volume)"; err == nil || err.Error() != want || got != 0 {
		t.Fatalf("Call = %d, %v; want 0, %q", got, err, want)
	}
	close(release)
	<-returned
	err = win32.Do(context.Background(), nil, "FlushFileBuffers", func() error { return errors.New("boom") })
	if err == nil || err.Error() != "boom" {
		t.Fatalf("Do with no limiter: %v", err)
	}
}
