// Package fakecri is a small CRI runtime service for tests: a real gRPC
// server, on a real unix socket or Windows named pipe, that answers
// ListPodSandbox, ListContainers and ContainerStatus (verbose) as containerd
// does, from a fixed description of pods, containers and their pids.
package fakecri
