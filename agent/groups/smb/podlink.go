package smb

import (
	"context"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// finalLocalPath confines the local_path of NewSmbGlobalMapping for the
// host command and applies rule pod-link to it: the share's link is placed
// in a pod's directory on the terms of CreateSymlink's links
// (confine.RefusePodLinkAt), decided on the path as resolved.
func (s *Server) finalLocalPath(ctx context.Context, localPath string) (string, error) {
	local, err := mappingLocalPath.Final(s.conf, localPath)
	if err != nil {
		return "", err
	}
	if err := s.conf.RefusePodLinkAt(confine.PeerCaller(ctx), localPath, local); err != nil {
		return "", confine.Named(mappingLocalPath.Name, err)
	}
	return local, nil
}
