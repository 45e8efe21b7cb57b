package smb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// WMI is Cmdlets done in the agent's own process through WMI, on the
// MSFT_SmbGlobalMapping class of root\Microsoft\Windows\SMB, as CSI Proxy
// 1.3 does them: a query of the mapping by its remote path, the static
// Create and the instance's Remove. Each operation, all its WMI calls
// together, runs under Limits (limits.Call) named after its principal
// method, and its calls get the context the limits give it.
//
// The password reaches the host only as the Credential in-parameter of
// Create: never in a query, and never in an error, which names the
// parameter at most.
type WMI struct {
	// Conn is the connection to the host's WMI service; without one every
	// operation fails.
	Conn wmi.Conn
	// Limits bounds every operation; nil runs them unbounded.
	Limits limits.Limiter
}

var _ Cmdlets = WMI{}

// The mapping's Status that reads as mapped (MSFT_SmbMapping documents
// the values: OK 0, Paused 1, Disconnected 2, NetworkError 3, Connecting
// 4, Reconnecting 5, Unavailable 6).
const statusOK = 0

// smbCodes are the non-zero ReturnValues of Create and Remove the agent
// names. Microsoft documents no return values for these methods; the SMB
// client answers with the Win32 error code of what failed (the cmdlets
// show it as "Windows System Error N"), whose meaning is from Microsoft's
// System Error Codes. A code not listed is reported by number: the
// storage management codes wmi.Result falls back to mean other things
// here.
var smbCodes = wmi.Codes{NoCommon: true, Text: map[uint32]string{
	5:    "Access is denied",
	53:   "The network path was not found",
	64:   "The specified network name is no longer available",
	67:   "The network name cannot be found",
	86:   "The specified network password is not correct",
	87:   "The parameter is incorrect",
	1219: "Multiple connections to a server or shared resource by the same user, using more than one user name, are not allowed",
	1326: "The user name or password is incorrect",
}}

func (w WMI) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return wmi.Run(ctx, w.Conn, w.Limits, op, fn)
}

// mapping returns the global mapping of remotePath, if there is one.
func (w WMI) mapping(ctx context.Context, remotePath string) (wmi.Object, bool, error) {
	q, err := wmi.Quote(remotePath)
	if err != nil {
		return wmi.Object{}, false, fmt.Errorf("the remote path cannot be looked up: %w", err)
	}
	objs, err := w.Conn.Query(ctx, wmi.NamespaceSMB, "SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = "+q)
	if wmi.IsNotFound(err) || (err == nil && len(objs) == 0) {
		return wmi.Object{}, false, nil
	}
	if err != nil {
		return wmi.Object{}, false, err
	}
	return objs[0], true, nil
}

// IsMapped reports whether a global mapping of remotePath exists and its
// Status is OK; a mapping in any other state is not mapped, and the caller
// replaces it.
func (w WMI) IsMapped(ctx context.Context, remotePath string) (bool, error) {
	var mapped bool
	err := w.do(ctx, "query of MSFT_SmbGlobalMapping", func(ctx context.Context) error {
		m, found, err := w.mapping(ctx, remotePath)
		if err != nil || !found {
			return err
		}
		status, ok := wmi.Uint32(m.Props["Status"])
		if !ok {
			return fmt.Errorf("the global mapping has Status %v (%T), want an unsigned integer", m.Props["Status"], m.Props["Status"])
		}
		mapped = status == statusOK
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("looking up the global mapping of %s: %w", remotePath, err)
	}
	return mapped, nil
}

// NewGlobalMapping maps remotePath for the whole host with Create. With a
// username the Credential in-parameter carries it and the password; with
// none the share is mapped with no credential, as the host's own identity
// (a password without a user name is not used), as CSI Proxy maps it.
func (w WMI) NewGlobalMapping(ctx context.Context, remotePath, username, password string, requirePrivacy bool) error {
	if strings.ContainsRune(remotePath, 0) {
		return fmt.Errorf("mapping %q: the remote path holds a NUL character", remotePath)
	}
	in := []wmi.Param{{Name: "RemotePath", Value: remotePath}, {Name: "RequirePrivacy", Value: requirePrivacy}}
	if username != "" {
		switch {
		case strings.ContainsRune(username, 0):
			return fmt.Errorf("mapping %s: the user name holds a NUL character", remotePath)
		case strings.ContainsRune(password, 0):
			return fmt.Errorf("mapping %s: the password holds a NUL character", remotePath)
		}
		in = append(in, wmi.Param{Name: "Credential", Value: credential(username, password)})
	}
	const op = "MSFT_SmbGlobalMapping.Create"
	err := w.do(ctx, op, func(ctx context.Context) error {
		_, err := wmi.Invoke(ctx, w.Conn, wmi.NamespaceSMB, "", op, smbCodes, in...)
		return err
	})
	if err != nil {
		return fmt.Errorf("mapping %s: %w", remotePath, err)
	}
	return nil
}

// credential serializes a user name and password as the CIM cmdlets pass
// a PSCredential to the SMB provider: the user name with backslashes and
// colons escaped by a backslash, a colon, then the password as it is.
func credential(username, password string) string {
	u := strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(username)
	return u + ":" + password
}

// RemoveGlobalMapping removes the global mapping of remotePath with its
// Remove, forced (even while the share is in use). A remote path with no
// mapping is an error, as the cmdlet's is.
func (w WMI) RemoveGlobalMapping(ctx context.Context, remotePath string) error {
	const op = "MSFT_SmbGlobalMapping.Remove"
	err := w.do(ctx, op, func(ctx context.Context) error {
		m, found, err := w.mapping(ctx, remotePath)
		if err != nil {
			return err
		}
		if !found {
			return errors.New("there is no global mapping of it")
		}
		_, err = wmi.Invoke(ctx, w.Conn, wmi.NamespaceSMB, m.Path, op, smbCodes, wmi.Param{Name: "Force", Value: true})
		return err
	})
	if err != nil {
		return fmt.Errorf("removing the global mapping of %s: %w", remotePath, err)
	}
	return nil
}
