//go:build windows

package main

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION: what a Job object
// counts for every process it has held, those that ended included. Times
// are in 100-nanosecond units.
type jobAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// usage is what one snapshot reads: this process's CPU and the job's.
type usage struct {
	// self is this process's CPU time (GetProcessTimes, kernel and user).
	self time.Duration
	// job is the CPU time the job accounts to every process it has held,
	// this one and the programs it started; 0 where the job keeps no times.
	job time.Duration
	// processes is how many processes the job has held, this one included.
	processes int
}

// accountingJob is a Job object holding this program, so that every process
// it starts (and those they start) is in the job from its creation: the job
// counts them, and on Windows accounts their CPU time even after they end;
// a job nested in it is counted too.
type accountingJob struct{ h windows.Handle }

// newAccountingJob puts this process in a new Job object. It sets no limit:
// the job only counts.
func newAccountingJob() (*accountingJob, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("creating the Job object that counts the processes this benchmark starts (CreateJobObject): %w", err)
	}
	if err := windows.AssignProcessToJobObject(h, windows.CurrentProcess()); err != nil {
		_ = windows.CloseHandle(h)
		return nil, fmt.Errorf("putting hostbench in its counting Job object (AssignProcessToJobObject); without it no process start is counted: %w", err)
	}
	return &accountingJob{h: h}, nil
}

// snapshot reads this process's CPU time and the job's accounting.
func (j *accountingJob) snapshot() (usage, error) {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &created, &exited, &kernel, &user); err != nil {
		return usage{}, fmt.Errorf("reading hostbench's CPU time (GetProcessTimes): %w", err)
	}
	var a jobAccounting
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&a)), uint32(unsafe.Sizeof(a)), nil); err != nil {
		return usage{}, fmt.Errorf("reading the counting Job object's accounting (QueryInformationJobObject, JobObjectBasicAccountingInformation): %w", err)
	}
	return usage{
		self:      ticks(filetime(kernel) + filetime(user)),
		job:       ticks(a.TotalUserTime + a.TotalKernelTime),
		processes: int(a.TotalProcesses),
	}, nil
}

// close closes the job's handle; hostbench stays in the job until it exits.
func (j *accountingJob) close() { _ = windows.CloseHandle(j.h) }

// filetime is a FILETIME as a count of 100-nanosecond units.
func filetime(t windows.Filetime) int64 {
	return int64(t.HighDateTime)<<32 | int64(t.LowDateTime)
}

// ticks converts 100-nanosecond units to a Duration.
func ticks(n int64) time.Duration { return time.Duration(n) * 100 }

// jobProcessIDs is JOBOBJECT_BASIC_PROCESS_ID_LIST with room for 64
// processes.
type jobProcessIDs struct {
	NumberOfAssignedProcesses uint32
	NumberOfProcessIdsInList  uint32
	ProcessIDList             [64]uintptr
}

// others returns the image paths of the job's running processes but this
// one, "pid N" for one whose path cannot be read.
func (j *accountingJob) others() ([]string, error) {
	var l jobProcessIDs
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicProcessIdList,
		uintptr(unsafe.Pointer(&l)), uint32(unsafe.Sizeof(l)), nil); err != nil {
		return nil, fmt.Errorf("listing the counting Job object's processes (QueryInformationJobObject, JobObjectBasicProcessIdList): %w", err)
	}
	self := windows.GetCurrentProcessId()
	var out []string
	for _, id := range l.ProcessIDList[:min(int(l.NumberOfProcessIdsInList), len(l.ProcessIDList))] {
		if uint32(id) == self {
			continue
		}
		out = append(out, imagePath(uint32(id)))
	}
	return out, nil
}

// imagePath is the image path of process pid, or "pid N".
func imagePath(pid uint32) string {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return fmt.Sprintf("pid %d", pid)
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return fmt.Sprintf("pid %d", pid)
	}
	return windows.UTF16ToString(buf[:n])
}
