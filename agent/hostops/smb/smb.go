package smb

import (
	"context"
)

// API is the smb host operations. Remote paths are validated UNC paths; the
// local path has been confined by the caller.
type API interface {
	// IsMapped reports whether a global mapping of remotePath exists and is OK.
	IsMapped(ctx context.Context, remotePath string) (bool, error)
	// PathValid reports whether remotePath is reachable through its mapping.
	PathValid(ctx context.Context, remotePath string) (bool, error)
	// NewGlobalMapping maps a share for the whole host.
	NewGlobalMapping(ctx context.Context, remotePath, username, password string, requirePrivacy bool) error
	// NewLink creates localPath as a directory symlink to remotePath.
	NewLink(ctx context.Context, remotePath, localPath string) error
	// RemoveGlobalMapping removes the global mapping of remotePath.
	RemoveGlobalMapping(ctx context.Context, remotePath string) error
}

// Cmdlets is what the smb group does through WMI (WMI): the SMB global
// mappings. Native runs the path check and the link.
type Cmdlets interface {
	IsMapped(ctx context.Context, remotePath string) (bool, error)
	NewGlobalMapping(ctx context.Context, remotePath, username, password string, requirePrivacy bool) error
	RemoveGlobalMapping(ctx context.Context, remotePath string) error
}
