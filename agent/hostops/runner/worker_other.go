//go:build !windows

package runner

import "os"

// workerJob groups a worker with the processes it starts; only Windows has
// one (a Job object). Elsewhere the worker process alone is killed.
type workerJob struct{}

// attachJob does nothing off Windows.
func attachJob(*os.Process) (*workerJob, error) { return nil, nil }

func (j *workerJob) kill()  {}
func (j *workerJob) close() {}
