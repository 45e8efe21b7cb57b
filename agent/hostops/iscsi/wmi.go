package iscsi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// WMI is API done in the agent's own process through WMI, on the iSCSI
// initiator classes of root\Microsoft\Windows\Storage, call by call as CSI
// Proxy 1.3 does it: the portal is queried by address and port, its
// targets, a target's session and connections and their disks are
// followed by association, and the work is the methods New and Remove of
// MSFT_iSCSITargetPortal, Connect and Disconnect of MSFT_iSCSITarget, and
// Unregister and SetCHAPSecret of MSFT_iSCSISession. It answers as the
// agent always has: adding a portal that exists, connecting
// a connected target and disconnecting one that is not connected change
// nothing and succeed; a target that is not connected has no disks; a
// connection is not made persistent, and a persistent session (one made
// by an older CSI Proxy) is unregistered before it is disconnected.
//
// Each operation, all its WMI calls together, runs under Limits
// (limits.Call) named after its principal method. CHAP secrets reach the
// host only as method in-parameters: never in a query, and never in an
// error, which names the parameter at most.
type WMI struct {
	// Conn is the connection to the host's WMI service; without one every
	// operation fails.
	Conn wmi.Conn
	// Limits bounds every operation; nil runs them unbounded.
	Limits limits.Limiter
}

var _ API = WMI{}

const ns = wmi.NamespaceStorage

func (w WMI) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return wmi.Run(ctx, w.Conn, w.Limits, op, fn)
}

func (w WMI) call(ctx context.Context, path, class, method string, in ...wmi.Param) error {
	_, err := wmi.Invoke(ctx, w.Conn, ns, path, class+"."+method, iscsiCodes, in...)
	return err
}

// findPortal returns the portal at pt, found=false when there is none.
func (w WMI) findPortal(ctx context.Context, pt Portal, port uint16) (wmi.Object, bool, error) {
	q, err := wmi.Quote(pt.Address)
	if err != nil {
		return wmi.Object{}, false, err
	}
	objs, err := w.Conn.Query(ctx, ns, "SELECT * FROM MSFT_iSCSITargetPortal WHERE TargetPortalAddress = "+q+
		" AND TargetPortalPortNumber = "+strconv.FormatUint(uint64(port), 10))
	if wmi.IsNotFound(err) || (err == nil && len(objs) == 0) {
		return wmi.Object{}, false, nil
	}
	if err != nil {
		return wmi.Object{}, false, err
	}
	return objs[0], true, nil
}

func (w WMI) portal(ctx context.Context, pt Portal, port uint16) (wmi.Object, error) {
	o, found, err := w.findPortal(ctx, pt, port)
	if err == nil && !found {
		err = fmt.Errorf("there is no target portal at %s", where(pt))
	}
	return o, err
}

// associators follows assoc from the object at path to its result objects.
// A path with a brace cannot be put in ASSOCIATORS OF {...}: it is refused.
func (w WMI) associators(ctx context.Context, path, assoc, resultClass string) ([]wmi.Object, error) {
	if path == "" || strings.ContainsAny(path, "{}") {
		return nil, fmt.Errorf("cannot follow %s from the object path %q", assoc, path)
	}
	objs, err := w.Conn.Query(ctx, ns, "ASSOCIATORS OF {"+path+"} WHERE AssocClass = "+assoc+" ResultClass = "+resultClass)
	if wmi.IsNotFound(err) {
		return nil, nil
	}
	return objs, err
}

func (w WMI) targets(ctx context.Context, portal wmi.Object) ([]wmi.Object, error) {
	return w.associators(ctx, portal.Path, "MSFT_iSCSITargetToiSCSITargetPortal", "MSFT_iSCSITarget")
}

// target returns the portal's target with the IQN (compared without case,
// as IQNs are) and whether it is connected.
func (w WMI) target(ctx context.Context, pt Portal, iqn string) (wmi.Object, bool, error) {
	port, err := checkPortal(pt)
	if err != nil {
		return wmi.Object{}, false, err
	}
	if err := plain("target IQN", iqn); err != nil {
		return wmi.Object{}, false, err
	}
	portal, err := w.portal(ctx, pt, port)
	if err != nil {
		return wmi.Object{}, false, err
	}
	ts, err := w.targets(ctx, portal)
	if err != nil {
		return wmi.Object{}, false, err
	}
	for _, t := range ts {
		if n, _ := t.Props["NodeAddress"].(string); strings.EqualFold(n, iqn) {
			connected, ok := t.Props["IsConnected"].(bool)
			if !ok {
				return wmi.Object{}, false, fmt.Errorf("target %q has IsConnected %v (%T), want a boolean", iqn, t.Props["IsConnected"], t.Props["IsConnected"])
			}
			return t, connected, nil
		}
	}
	return wmi.Object{}, false, fmt.Errorf("the target portal at %s has no target %q", where(pt), iqn)
}

// AddTargetPortal creates the portal with New, unless it exists, and
// checks it is there after, as CSI Proxy does.
func (w WMI) AddTargetPortal(ctx context.Context, pt Portal) error {
	port, err := checkPortal(pt)
	if err != nil {
		return fmt.Errorf("adding a target portal: %w", err)
	}
	err = w.do(ctx, "MSFT_iSCSITargetPortal.New", func(ctx context.Context) error {
		if _, found, err := w.findPortal(ctx, pt, port); err != nil || found {
			return err
		}
		if err := w.call(ctx, "MSFT_iSCSITargetPortal", "MSFT_iSCSITargetPortal", "New",
			wmi.Param{Name: "TargetPortalAddress", Value: pt.Address}, wmi.Param{Name: "TargetPortalPortNumber", Value: port}); err != nil {
			return err
		}
		_, found, err := w.findPortal(ctx, pt, port)
		if err == nil && !found {
			err = errors.New("MSFT_iSCSITargetPortal.New succeeded but the portal is not there after it")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("adding the target portal at %s: %w", where(pt), err)
	}
	return nil
}

// DiscoverTargetPortal lists the IQNs of the portal's targets.
func (w WMI) DiscoverTargetPortal(ctx context.Context, pt Portal) ([]string, error) {
	port, err := checkPortal(pt)
	if err != nil {
		return nil, fmt.Errorf("discovering a target portal: %w", err)
	}
	var iqns []string
	err = w.do(ctx, "query of MSFT_iSCSITarget", func(ctx context.Context) error {
		portal, err := w.portal(ctx, pt, port)
		if err != nil {
			return err
		}
		ts, err := w.targets(ctx, portal)
		if err != nil {
			return err
		}
		for _, t := range ts {
			n, ok := t.Props["NodeAddress"].(string)
			if !ok {
				return fmt.Errorf("a target has NodeAddress %v (%T), want a string", t.Props["NodeAddress"], t.Props["NodeAddress"])
			}
			iqns = append(iqns, n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("discovering the targets of the portal at %s: %w", where(pt), err)
	}
	return iqns, nil
}

// RemoveTargetPortal removes the portal with its Remove; a portal that
// does not exist is an error, as CSI Proxy's is.
func (w WMI) RemoveTargetPortal(ctx context.Context, pt Portal) error {
	port, err := checkPortal(pt)
	if err != nil {
		return fmt.Errorf("removing a target portal: %w", err)
	}
	err = w.do(ctx, "MSFT_iSCSITargetPortal.Remove", func(ctx context.Context) error {
		portal, err := w.portal(ctx, pt, port)
		if err != nil {
			return err
		}
		return w.call(ctx, portal.Path, "MSFT_iSCSITargetPortal", "Remove",
			wmi.Param{Name: "TargetPortalPortNumber", Value: port}, wmi.Param{Name: "TargetPortalAddress", Value: pt.Address})
	})
	if err != nil {
		return fmt.Errorf("removing the target portal at %s: %w", where(pt), err)
	}
	return nil
}

// ListTargetPortals lists the configured portals.
func (w WMI) ListTargetPortals(ctx context.Context) ([]Portal, error) {
	var portals []Portal
	err := w.do(ctx, "query of MSFT_iSCSITargetPortal", func(ctx context.Context) error {
		objs, err := w.Conn.Query(ctx, ns, "SELECT TargetPortalAddress, TargetPortalPortNumber FROM MSFT_iSCSITargetPortal")
		if wmi.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, o := range objs {
			a, ok := o.Props["TargetPortalAddress"].(string)
			port, pok := wmi.Uint32(o.Props["TargetPortalPortNumber"])
			if !ok || !pok {
				return fmt.Errorf("a target portal has address %v (%T) and port %v (%T), want a string and an unsigned integer",
					o.Props["TargetPortalAddress"], o.Props["TargetPortalAddress"], o.Props["TargetPortalPortNumber"], o.Props["TargetPortalPortNumber"])
			}
			portals = append(portals, Portal{Address: a, Port: port})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the target portals: %w", err)
	}
	return portals, nil
}

// ConnectTarget connects the portal's target with the IQN, not
// persistently, with CHAP when asked, unless it is connected.
func (w WMI) ConnectTarget(ctx context.Context, pt Portal, iqn string, auth AuthType, chapUser, chapSecret string) error {
	if auth != AuthNone && auth != AuthOneWayCHAP && auth != AuthMutualCHAP {
		return fmt.Errorf("connecting to target %q: unknown CHAP mode %d", iqn, auth)
	}
	if err := errors.Join(plain("CHAP user name", chapUser), secret("CHAP secret", chapSecret)); err != nil && auth != AuthNone {
		return fmt.Errorf("connecting to target %q: %w", iqn, err)
	}
	err := w.do(ctx, "MSFT_iSCSITarget.Connect", func(ctx context.Context) error {
		_, connected, err := w.target(ctx, pt, iqn)
		if err != nil || connected {
			return err
		}
		in := []wmi.Param{{Name: "NodeAddress", Value: iqn}, {Name: "TargetPortalAddress", Value: pt.Address},
			{Name: "TargetPortalPortNumber", Value: uint16(pt.Port)}, {Name: "AuthenticationType", Value: auth.cmdletName()},
			{Name: "IsPersistent", Value: false}}
		if auth != AuthNone {
			in = append(in, wmi.Param{Name: "ChapUsername", Value: chapUser}, wmi.Param{Name: "ChapSecret", Value: chapSecret})
		}
		return w.call(ctx, "MSFT_iSCSITarget", "MSFT_iSCSITarget", "Connect", in...)
	})
	if err != nil {
		return fmt.Errorf("connecting to target %q at %s: %w", iqn, where(pt), err)
	}
	return nil
}

// DisconnectTarget disconnects the portal's target with the IQN, if it is
// connected: its session, unregistered first when it is persistent.
func (w WMI) DisconnectTarget(ctx context.Context, pt Portal, iqn string) error {
	err := w.do(ctx, "MSFT_iSCSITarget.Disconnect", func(ctx context.Context) error {
		t, connected, err := w.target(ctx, pt, iqn)
		if err != nil || !connected {
			return err
		}
		sessions, err := w.associators(ctx, t.Path, "MSFT_iSCSITargetToiSCSISession", "MSFT_iSCSISession")
		if err != nil {
			return err
		}
		if len(sessions) == 0 {
			return errors.New("the target is connected but has no session")
		}
		s := sessions[0]
		id, ok := s.Props["SessionIdentifier"].(string)
		if !ok || id == "" {
			return fmt.Errorf("its session has SessionIdentifier %v (%T), want a string", s.Props["SessionIdentifier"], s.Props["SessionIdentifier"])
		}
		if persistent, _ := s.Props["IsPersistent"].(bool); persistent {
			if err := w.call(ctx, s.Path, "MSFT_iSCSISession", "Unregister"); err != nil {
				return err
			}
		}
		return w.call(ctx, t.Path, "MSFT_iSCSITarget", "Disconnect", wmi.Param{Name: "SessionIdentifier", Value: id})
	})
	if err != nil {
		return fmt.Errorf("disconnecting target %q at %s: %w", iqn, where(pt), err)
	}
	return nil
}

// GetTargetDisks returns the numbers of the disks of the target's
// connections: none when it is not connected.
func (w WMI) GetTargetDisks(ctx context.Context, pt Portal, iqn string) ([]string, error) {
	var numbers []string
	err := w.do(ctx, "query of MSFT_iSCSIConnectionToDisk", func(ctx context.Context) error {
		t, connected, err := w.target(ctx, pt, iqn)
		if err != nil || !connected {
			return err
		}
		conns, err := w.associators(ctx, t.Path, "MSFT_iSCSITargetToiSCSIConnection", "MSFT_iSCSIConnection")
		if err != nil {
			return err
		}
		for _, c := range conns {
			disks, err := w.associators(ctx, c.Path, "MSFT_iSCSIConnectionToDisk", "MSFT_Disk")
			if err != nil {
				return err
			}
			for _, d := range disks {
				n, ok := wmi.Uint32(d.Props["Number"])
				if !ok {
					return fmt.Errorf("a disk of the target has Number %v (%T), want an unsigned integer", d.Props["Number"], d.Props["Number"])
				}
				numbers = append(numbers, strconv.FormatUint(uint64(n), 10))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the disks of target %q at %s: %w", iqn, where(pt), err)
	}
	return numbers, nil
}

// SetMutualChapSecret sets the initiator's mutual CHAP secret with
// MSFT_iSCSISession's static SetCHAPSecret, as CSI Proxy does.
func (w WMI) SetMutualChapSecret(ctx context.Context, chapSecret string) error {
	if err := secret("mutual CHAP secret", chapSecret); err != nil {
		return fmt.Errorf("setting the mutual CHAP secret: %w", err)
	}
	err := w.do(ctx, "MSFT_iSCSISession.SetCHAPSecret", func(ctx context.Context) error {
		return w.call(ctx, "MSFT_iSCSISession", "MSFT_iSCSISession", "SetCHAPSecret", wmi.Param{Name: "ChapSecret", Value: chapSecret})
	})
	if err != nil {
		return fmt.Errorf("setting the mutual CHAP secret: %w", err)
	}
	return nil
}
