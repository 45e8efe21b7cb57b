package server

import (
	"fmt"
	"strings"
)

// DefaultSDDL grants full access to SYSTEM, to the Administrators group and to
// the container administrator account (S-1-5-93-2-1, the identity of
// ContainerAdministrator in Windows containers, which HostProcess CSI node
// plugins run as), and to nobody else. The "P" flag blocks inherited ACEs.
const DefaultSDDL = "D:P(A;;GA;;;SY)(A;;GA;;;BA)(A;;GA;;;S-1-5-93-2-1)"

// SocketMode is the permission of the unix sockets: owner and group only.
const SocketMode = 0o660

// ListenOptions configures the listeners.
type ListenOptions struct {
	// SocketDir is the directory of the unix sockets (not Windows).
	SocketDir string
	// SDDL is the security descriptor of the named pipes (Windows only);
	// empty means DefaultSDDL.
	SDDL string
}

// Address returns where the endpoint of an API group version listens on this
// OS: its pipe on Windows, its socket elsewhere.
func (o ListenOptions) Address(group, version string) string {
	return address(o, group, version)
}

// ValidateSDDL catches security descriptors that are plainly not SDDL before
// the agent starts; Windows parses the rest when the pipe is created.
func ValidateSDDL(sddl string) error {
	if sddl == "" {
		return nil
	}
	if !strings.HasPrefix(sddl, "D:") && !strings.HasPrefix(sddl, "O:") && !strings.HasPrefix(sddl, "G:") {
		return fmt.Errorf("pipe security descriptor %q is not SDDL: it must start with O:, G: or D:, e.g. %s", sddl, DefaultSDDL)
	}
	if !strings.Contains(sddl, "D:") {
		return fmt.Errorf("pipe security descriptor %q has no DACL (D:...), which would leave the pipes open to everyone; e.g. %s", sddl, DefaultSDDL)
	}
	if strings.Count(sddl, "(") != strings.Count(sddl, ")") {
		return fmt.Errorf("pipe security descriptor %q has unbalanced parentheses", sddl)
	}
	return nil
}
