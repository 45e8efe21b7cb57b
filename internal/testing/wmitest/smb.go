package wmitest

import (
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// The SMB global mapping class of root\Microsoft\Windows\SMB. Microsoft
// has no page for it: its methods are as the SmbWmiV2 provider's MOF
// declares them (Microsoft's generated WMI bindings for Windows Server 2019,
// github.com/microsoft/wmi), and its keys and Status values are those of
// the documented MSFT_SmbMapping, its per-user counterpart
// (https://learn.microsoft.com/en-us/previous-versions/windows/desktop/smb/msft-smbmapping):
//
//	class MSFT_SmbGlobalMapping {
//	  [key] string LocalPath; [key] string RemotePath;
//	  boolean RequireIntegrity; boolean RequirePrivacy;
//	  uint32 Status; boolean UseWriteThrough;
//	  static uint32 Create([in] string LocalPath, [in] string RemotePath,
//	    [in] string Credential, [in] boolean Persistent,
//	    [in] boolean RequireIntegrity, [in] boolean RequirePrivacy,
//	    [in] string FullAccess[], [in] string DenyAccess[],
//	    [in] boolean UseWriteThrough,
//	    [out] MSFT_SmbGlobalMapping CreatedMapping);
//	  uint32 Remove([in] boolean Force);
//	};
//
// Credential is a PSCredential as the CIM cmdlets serialize it: the user
// name, with backslashes and colons escaped by a backslash, a colon, and
// the password as it is. Status is OK (0), Paused (1), Disconnected (2),
// NetworkError (3), Connecting (4), Reconnecting (5) or Unavailable (6).
const ClassSmbGlobalMapping = "MSFT_SmbGlobalMapping"

// The mapping Status values.
const (
	SmbStatusOK           uint32 = 0
	SmbStatusDisconnected uint32 = 2
	SmbStatusUnavailable  uint32 = 6
)

// SMB is the SMB client AddSMB registers: its global mappings are the
// provider's MSFT_SmbGlobalMapping instances.
type SMB struct {
	faults
	users map[string]string // user name of each mapping's credential, by remote path
}

// AddSMB registers MSFT_SmbGlobalMapping in wmi.NamespaceSMB, keyed by
// RemotePath (a global mapping has no local path in the agent's use).
// Create adds a mapping, OK, or updates the one of the same remote path;
// a Credential that does not parse fails it with 87
// (ERROR_INVALID_PARAMETER). Remove removes the mapping.
func AddSMB(p *Provider) *SMB {
	s := &SMB{faults: faults{p: p}, users: map[string]string{}}
	p.AddClass(&Class{Namespace: wmi.NamespaceSMB, Name: ClassSmbGlobalMapping, Key: "RemotePath", Methods: map[string]Method{
		"Create": {
			Static: true,
			In: []Param{{"LocalPath", ""}, {"RemotePath", ""}, {"Credential", ""}, {"Persistent", false},
				{"RequireIntegrity", false}, {"RequirePrivacy", false}, {"FullAccess", []string(nil)},
				{"DenyAccess", []string(nil)}, {"UseWriteThrough", false}},
			Out: []Param{{"CreatedMapping", wmi.Object{}}},
			Run: s.create,
		},
		"Remove": {
			In: []Param{{"Force", false}},
			Run: func(p *Provider, self *Instance, in map[string]any) (uint32, map[string]any) {
				if code, ok := s.faulted(ClassSmbGlobalMapping, "Remove"); ok {
					return code, nil
				}
				p.RemoveLocked(wmi.NamespaceSMB, self)
				return 0, nil
			},
		},
	}})
	return s
}

func (s *SMB) create(p *Provider, _ *Instance, in map[string]any) (uint32, map[string]any) {
	if code, ok := s.faulted(ClassSmbGlobalMapping, "Create"); ok {
		return code, nil
	}
	remote, _ := in["RemotePath"].(string)
	if remote == "" {
		return 87, nil
	}
	user := ""
	if cred, ok := in["Credential"].(string); ok {
		u, ok := parseCredential(cred)
		if !ok {
			return 87, nil
		}
		user = u
	}
	privacy, _ := in["RequirePrivacy"].(bool)
	integrity, _ := in["RequireIntegrity"].(bool)
	props := map[string]any{"LocalPath": "", "RemotePath": remote, "Status": SmbStatusOK,
		"RequirePrivacy": privacy, "RequireIntegrity": integrity, "UseWriteThrough": false}
	var m *Instance
	for _, x := range p.InstancesLocked(wmi.NamespaceSMB, ClassSmbGlobalMapping) {
		if r, _ := x.Props["RemotePath"].(string); strings.EqualFold(r, remote) {
			m = x
		}
	}
	if m == nil {
		m = p.AddLocked(wmi.NamespaceSMB, ClassSmbGlobalMapping, props)
	} else {
		m.Props = props
	}
	s.users[strings.ToLower(remote)] = user
	return 0, map[string]any{"CreatedMapping": p.object(p.classes[classKey(wmi.NamespaceSMB, ClassSmbGlobalMapping)], m)}
}

// parseCredential reads the user name of a serialized credential: up to
// the first colon no backslash escapes. The password is not kept.
func parseCredential(cred string) (user string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(cred); i++ {
		switch cred[i] {
		case '\\':
			if i+1 >= len(cred) || (cred[i+1] != '\\' && cred[i+1] != ':') {
				return "", false
			}
			i++
			b.WriteByte(cred[i])
		case ':':
			return b.String(), true
		default:
			b.WriteByte(cred[i])
		}
	}
	return "", false
}

// AddMapping adds a global mapping of remotePath with status.
func (s *SMB) AddMapping(remotePath string, status uint32) *Instance {
	return s.p.Add(wmi.NamespaceSMB, ClassSmbGlobalMapping, map[string]any{"LocalPath": "", "RemotePath": remotePath,
		"Status": status, "RequirePrivacy": false, "RequireIntegrity": false, "UseWriteThrough": false})
}

// User returns the user name the mapping of remotePath was created with,
// "" for none (the host's own identity), as the provider parsed it from
// the Credential.
func (s *SMB) User(remotePath string) string {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.users[strings.ToLower(remotePath)]
}

// Fail makes later calls of MSFT_SmbGlobalMapping.method ("Create",
// "Remove") return code (a Win32 error code, as the SMB client reports
// them) without running; 0 makes them run again.
func (s *SMB) Fail(method string, code uint32) { s.fail(ClassSmbGlobalMapping, method, code) }
