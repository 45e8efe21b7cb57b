// Package validate checks the non-path values of Windows host operations
// (volume ids, UNC share paths, service names, iSCSI addresses and names,
// credentials) before any command runs. Values travel as environment
// variables and could not change a command's text anyway; validation keeps
// cmdlet wildcards and nonsense from reaching the host at all, and gives the
// caller a clear InvalidArgument.
package validate
