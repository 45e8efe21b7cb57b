package runner

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// workerJob is the Job object holding one PowerShell worker and every
// process it starts. It is made with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, so
// that closing its only handle (the agent's; the handle is not inherited)
// ends them all: when the worker is killed or exits, and when the agent
// itself ends, however it ends.
type workerJob struct {
	mu sync.Mutex
	h  windows.Handle // 0 once closed
}

// attachJob puts the process in a new Job object.
func attachJob(p *os.Process) (*workerJob, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("creating a Job object for the PowerShell worker (CreateJobObject): %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(h)
		return nil, fmt.Errorf("setting JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE on the PowerShell worker's Job object (SetInformationJobObject): %w", err)
	}
	assignErr := p.WithHandle(func(ph uintptr) {
		err = windows.AssignProcessToJobObject(h, windows.Handle(ph))
	})
	if assignErr == nil {
		assignErr = err
	}
	if assignErr != nil {
		_ = windows.CloseHandle(h)
		return nil, fmt.Errorf("putting the PowerShell worker in its Job object (AssignProcessToJobObject), without which the processes it starts would outlive it: %w", assignErr)
	}
	return &workerJob{h: h}, nil
}

// kill ends every process in the job.
func (j *workerJob) kill() {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.h != 0 {
		_ = windows.TerminateJobObject(j.h, 1)
	}
}

// close closes the job's handle, which ends what is left in it.
func (j *workerJob) close() {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.h != 0 {
		_ = windows.CloseHandle(j.h)
		j.h = 0
	}
}
