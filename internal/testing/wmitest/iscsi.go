package wmitest

import (
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// The iSCSI initiator classes of root\Microsoft\Windows\Storage, with the
// methods CSI Proxy 1.3 calls, as Microsoft documents them
// (https://learn.microsoft.com/en-us/previous-versions/windows/desktop/iscsidisc/
// msft-iscsitargetportal, msft-iscsitarget, msft-iscsisession,
// msft-iscsiconnection and their methods' pages) and the provider's MOF
// declares them:
//
//	MSFT_iSCSITargetPortal { string TargetPortalAddress; uint16 TargetPortalPortNumber;
//	  string InitiatorInstanceName; string InitiatorPortalAddress; boolean IsHeaderDigest; boolean IsDataDigest;
//	  static uint32 New([in] string TargetPortalAddress, [in] uint16 TargetPortalPortNumber,
//	    [in] string InitiatorInstanceName, [in] string InitiatorPortalAddress,
//	    [in] string AuthenticationType, [in] string ChapUsername, [in] string ChapSecret,
//	    [in] boolean IsHeaderDigest, [in] boolean IsDataDigest, [out] MSFT_iSCSITargetPortal CreatedTargetPortal);
//	  uint32 Remove([in] string InitiatorInstanceName, [in] string InitiatorPortalAddress,
//	    [in] uint16 TargetPortalPortNumber, [in] string TargetPortalAddress); }
//	MSFT_iSCSITarget { string NodeAddress; boolean IsConnected;
//	  static uint32 Connect([in] string NodeAddress, [in] string TargetPortalAddress,
//	    [in] uint16 TargetPortalPortNumber, [in] string InitiatorPortalAddress, [in] boolean IsDataDigest,
//	    [in] boolean IsHeaderDigest, [in] boolean ReportToPnP, [in] string AuthenticationType,
//	    [in] string ChapUsername, [in] string ChapSecret, [in] boolean IsMultipathEnabled,
//	    [in] boolean IsPersistent, [in] string InitiatorInstanceName, [out] MSFT_iSCSISession CreatediSCSISession);
//	  uint32 Disconnect([in] string SessionIdentifier); }
//	MSFT_iSCSISession { string SessionIdentifier; string TargetNodeAddress; boolean IsConnected;
//	  boolean IsPersistent; string AuthenticationType; ...
//	  uint32 Unregister(); static uint32 SetCHAPSecret([in] string ChapSecret); }
//	MSFT_iSCSIConnection { string ConnectionIdentifier; ... }
//
// (The page of New leaves out AuthenticationType, ChapUsername and
// ChapSecret, and that of Connect ChapUsername and ChapSecret, which the
// MOF declares, the cmdlets take and CSI Proxy passes; SetCHAPSecret is
// called on the class, as Set-IscsiChapSecret and CSI Proxy call it.) The
// associations are MSFT_iSCSITargetToiSCSITargetPortal,
// MSFT_iSCSITargetToiSCSISession, MSFT_iSCSITargetToiSCSIConnection and
// MSFT_iSCSIConnectionToDisk (to MSFT_Disk, which AddISCSI does not
// register). AuthenticationType is NONE, ONEWAYCHAP or MUTUALCHAP.
//
// The methods answer the iSCSI discovery codes of iscsierr.h (the
// ISCSI_STATUS_QUALIFIERS Microsoft lists) when they fail.
const (
	ClassISCSITargetPortal = "MSFT_iSCSITargetPortal"
	ClassISCSITarget       = "MSFT_iSCSITarget"
	ClassISCSISession      = "MSFT_iSCSISession"
	ClassISCSIConnection   = "MSFT_iSCSIConnection"

	AssocTargetToPortal     = "MSFT_iSCSITargetToiSCSITargetPortal"
	AssocTargetToSession    = "MSFT_iSCSITargetToiSCSISession"
	AssocTargetToConnection = "MSFT_iSCSITargetToiSCSIConnection"
	AssocConnectionToDisk   = "MSFT_iSCSIConnectionToDisk"
)

// Codes of iscsierr.h the provider answers with.
const (
	ISDSCLoginFailed           uint32 = 0xEFFF0002
	ISDSCAuthenticationFailure uint32 = 0xEFFF0009
	ISDSCNotFound              uint32 = 0xEFFF000B
	ISDSCSessionAlreadyExists  uint32 = 0xEFFF0016
)

// ISCSI is the initiator AddISCSI registers.
type ISCSI struct {
	faults
	targets map[*Instance][]*Instance // by portal
	disks   map[*Instance][]*Instance // of each target, attached when it connects
	chap    map[*Instance][2]string   // the CHAP user name and secret a target requires
	serial  int
	mutual  string // the secret SetCHAPSecret last set
}

// AddISCSI registers the iSCSI initiator classes in
// wmi.NamespaceStorage. wmitest keys an instance by one property, so a
// portal is keyed by its address, and the portal methods find the portal
// by the address and port they are given, as the host's provider does.
func AddISCSI(p *Provider) *ISCSI {
	s := &ISCSI{faults: faults{p: p}, targets: map[*Instance][]*Instance{}, disks: map[*Instance][]*Instance{}, chap: map[*Instance][2]string{}}
	ns := wmi.NamespaceStorage
	p.AddClass(&Class{Namespace: ns, Name: ClassISCSITargetPortal, Key: "TargetPortalAddress", Methods: map[string]Method{
		"New": {Static: true,
			In: []Param{{"TargetPortalAddress", ""}, {"TargetPortalPortNumber", uint16(0)}, {"InitiatorInstanceName", ""},
				{"InitiatorPortalAddress", ""}, {"AuthenticationType", ""}, {"ChapUsername", ""}, {"ChapSecret", ""},
				{"IsHeaderDigest", false}, {"IsDataDigest", false}},
			Out: []Param{{"CreatedTargetPortal", wmi.Object{}}},
			Run: s.newPortal},
		"Remove": {
			In: []Param{{"InitiatorInstanceName", ""}, {"InitiatorPortalAddress", ""}, {"TargetPortalPortNumber", uint16(0)},
				{"TargetPortalAddress", ""}},
			Run: s.removePortal},
	}})
	p.AddClass(&Class{Namespace: ns, Name: ClassISCSITarget, Key: "NodeAddress", Methods: map[string]Method{
		"Connect": {Static: true,
			In: []Param{{"NodeAddress", ""}, {"TargetPortalAddress", ""}, {"TargetPortalPortNumber", uint16(0)},
				{"InitiatorPortalAddress", ""}, {"IsDataDigest", false}, {"IsHeaderDigest", false}, {"ReportToPnP", false},
				{"AuthenticationType", ""}, {"ChapUsername", ""}, {"ChapSecret", ""}, {"IsMultipathEnabled", false},
				{"IsPersistent", false}, {"InitiatorInstanceName", ""}},
			Out: []Param{{"CreatediSCSISession", wmi.Object{}}},
			Run: s.connect},
		"Disconnect": {In: []Param{{"SessionIdentifier", ""}}, Run: s.disconnect},
	}})
	p.AddClass(&Class{Namespace: ns, Name: ClassISCSISession, Key: "SessionIdentifier", Methods: map[string]Method{
		"Unregister": {Run: func(p *Provider, self *Instance, _ map[string]any) (uint32, map[string]any) {
			if code, ok := s.faulted(ClassISCSISession, "Unregister"); ok {
				return code, nil
			}
			self.Props["IsPersistent"] = false
			return 0, nil
		}},
		"SetCHAPSecret": {Static: true, In: []Param{{"ChapSecret", ""}},
			Run: func(p *Provider, _ *Instance, in map[string]any) (uint32, map[string]any) {
				if code, ok := s.faulted(ClassISCSISession, "SetCHAPSecret"); ok {
					return code, nil
				}
				s.mutual, _ = in["ChapSecret"].(string)
				return 0, nil
			}},
	}})
	p.AddClass(&Class{Namespace: ns, Name: ClassISCSIConnection, Key: "ConnectionIdentifier"})
	return s
}

func (s *ISCSI) portal(address string, port uint16) *Instance {
	for _, x := range s.p.InstancesLocked(wmi.NamespaceStorage, ClassISCSITargetPortal) {
		if a, _ := x.Props["TargetPortalAddress"].(string); strings.EqualFold(a, address) && x.Props["TargetPortalPortNumber"] == port {
			return x
		}
	}
	return nil
}

func portalArgs(in map[string]any) (string, uint16) {
	a, _ := in["TargetPortalAddress"].(string)
	n, _ := in["TargetPortalPortNumber"].(uint16)
	return a, n
}

func (s *ISCSI) newPortal(p *Provider, _ *Instance, in map[string]any) (uint32, map[string]any) {
	if code, ok := s.faulted(ClassISCSITargetPortal, "New"); ok {
		return code, nil
	}
	address, port := portalArgs(in)
	pt := s.portal(address, port)
	if pt == nil {
		pt = p.AddLocked(wmi.NamespaceStorage, ClassISCSITargetPortal, portalProps(address, port))
	}
	return 0, map[string]any{"CreatedTargetPortal": p.object(p.classes[classKey(wmi.NamespaceStorage, ClassISCSITargetPortal)], pt)}
}

func portalProps(address string, port uint16) map[string]any {
	return map[string]any{"TargetPortalAddress": address, "TargetPortalPortNumber": port, "InitiatorInstanceName": nil,
		"InitiatorPortalAddress": nil, "IsHeaderDigest": false, "IsDataDigest": false}
}

func (s *ISCSI) removePortal(p *Provider, self *Instance, in map[string]any) (uint32, map[string]any) {
	if code, ok := s.faulted(ClassISCSITargetPortal, "Remove"); ok {
		return code, nil
	}
	pt := s.portal(portalArgs(in))
	if pt == nil {
		return ISDSCNotFound, nil
	}
	delete(s.targets, pt)
	p.RemoveLocked(wmi.NamespaceStorage, pt)
	return 0, nil
}

func (s *ISCSI) connect(p *Provider, _ *Instance, in map[string]any) (uint32, map[string]any) {
	if code, ok := s.faulted(ClassISCSITarget, "Connect"); ok {
		return code, nil
	}
	pt := s.portal(portalArgs(in))
	iqn, _ := in["NodeAddress"].(string)
	var t *Instance
	for _, x := range s.targets[pt] {
		if n, _ := x.Props["NodeAddress"].(string); strings.EqualFold(n, iqn) {
			t = x
		}
	}
	if pt == nil || t == nil {
		return ISDSCNotFound, nil
	}
	if t.Props["IsConnected"] == true {
		return ISDSCSessionAlreadyExists, nil
	}
	auth, _ := in["AuthenticationType"].(string)
	switch strings.ToUpper(auth) {
	case "", "NONE", "ONEWAYCHAP", "MUTUALCHAP":
	default:
		return 0xEFFF000F, nil // ISDSC_MISSING_PARAMETER
	}
	if want, ok := s.chap[t]; ok {
		user, _ := in["ChapUsername"].(string)
		secret, _ := in["ChapSecret"].(string)
		if auth := strings.ToUpper(auth); (auth != "ONEWAYCHAP" && auth != "MUTUALCHAP") || user != want[0] || secret != want[1] {
			return ISDSCAuthenticationFailure, nil
		}
	}
	ns := wmi.NamespaceStorage
	s.serial++
	id := fmt.Sprintf("ffffac0cacbff010-40000137000000%02d", s.serial)
	persistent, _ := in["IsPersistent"].(bool)
	sess := p.AddLocked(ns, ClassISCSISession, map[string]any{"SessionIdentifier": id, "TargetNodeAddress": t.Props["NodeAddress"],
		"IsConnected": true, "IsPersistent": persistent, "AuthenticationType": strings.ToUpper(auth)})
	conn := p.AddLocked(ns, ClassISCSIConnection, map[string]any{"ConnectionIdentifier": fmt.Sprintf("ffffac0cacbff010-%d", s.serial),
		"TargetAddress": pt.Props["TargetPortalAddress"], "TargetPortNumber": pt.Props["TargetPortalPortNumber"]})
	p.AssociateLocked(AssocTargetToSession, t, sess)
	p.AssociateLocked(AssocTargetToConnection, t, conn)
	for _, d := range s.disks[t] {
		p.AssociateLocked(AssocConnectionToDisk, conn, d)
	}
	t.Props["IsConnected"] = true
	return 0, map[string]any{"CreatediSCSISession": p.object(p.classes[classKey(ns, ClassISCSISession)], sess)}
}

func (s *ISCSI) disconnect(p *Provider, self *Instance, in map[string]any) (uint32, map[string]any) {
	if code, ok := s.faulted(ClassISCSITarget, "Disconnect"); ok {
		return code, nil
	}
	ns := wmi.NamespaceStorage
	id, _ := in["SessionIdentifier"].(string)
	var sess *Instance
	for _, x := range p.InstancesLocked(ns, ClassISCSISession) {
		if x.Props["SessionIdentifier"] == id && strings.EqualFold(fmt.Sprint(x.Props["TargetNodeAddress"]), fmt.Sprint(self.Props["NodeAddress"])) {
			sess = x
		}
	}
	if sess == nil {
		return ISDSCNotFound, nil
	}
	var conns []*Instance
	for _, pr := range p.assoc[strings.ToLower(AssocTargetToConnection)] {
		if pr[0] == self {
			conns = append(conns, pr[1])
		}
	}
	p.RemoveLocked(ns, sess)
	for _, c := range conns {
		p.RemoveLocked(ns, c)
	}
	self.Props["IsConnected"] = false
	return 0, nil
}

// AddPortal adds a target portal, as New would.
func (s *ISCSI) AddPortal(address string, port uint16) *Instance {
	return s.p.Add(wmi.NamespaceStorage, ClassISCSITargetPortal, portalProps(address, port))
}

// AddTarget makes the target iqn discoverable through portal, not
// connected; a target of that IQN reached through another portal is the
// same instance.
func (s *ISCSI) AddTarget(portal *Instance, iqn string) *Instance {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	var t *Instance
	for _, x := range s.p.InstancesLocked(wmi.NamespaceStorage, ClassISCSITarget) {
		if n, _ := x.Props["NodeAddress"].(string); strings.EqualFold(n, iqn) {
			t = x
		}
	}
	if t == nil {
		t = s.p.AddLocked(wmi.NamespaceStorage, ClassISCSITarget, map[string]any{"NodeAddress": iqn, "IsConnected": false})
	}
	s.targets[portal] = append(s.targets[portal], t)
	s.p.AssociateLocked(AssocTargetToPortal, t, portal)
	return t
}

// AttachDisk makes disk (an instance of a MSFT_Disk class the test
// registers) a disk of target, which its connection reaches once it is
// connected.
func (s *ISCSI) AttachDisk(target, disk *Instance) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.disks[target] = append(s.disks[target], disk)
}

// RequireCHAP makes target refuse a Connect without CHAP or with another
// user name or secret, with ISDSC_AUTHENTICATION_FAILURE.
func (s *ISCSI) RequireCHAP(target *Instance, user, secret string) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.chap[target] = [2]string{user, secret}
}

// MutualCHAPSecret returns the secret SetCHAPSecret last set.
func (s *ISCSI) MutualCHAPSecret() string {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.mutual
}

// Fail makes later calls of class.method return code (an iscsierr.h
// code) without running; 0 makes them run again.
func (s *ISCSI) Fail(class, method string, code uint32) { s.fail(class, method, code) }
