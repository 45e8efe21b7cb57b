package iscsi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// The values of the WMI operations: the codes their methods answer, and
// the checks of what a request gives them.

// iscsiCodes are the codes of iscsierr.h the initiator's methods answer
// with, as Microsoft lists them (ISCSI_STATUS_QUALIFIERS); another
// non-zero code is reported by number: the storage management codes
// wmi.Result falls back to mean other things here.
var iscsiCodes = wmi.Codes{NoCommon: true, Text: map[uint32]string{
	0xEFFF0001: "A non-specific error occurred",
	0xEFFF0002: "The login failed",
	0xEFFF0003: "The connection failed",
	0xEFFF0008: "Initiator error",
	0xEFFF0009: "Authentication failure",
	0xEFFF000A: "Authorization failure",
	0xEFFF000B: "Not found",
	0xEFFF000C: "The target has been removed",
	0xEFFF000E: "Too many connections",
	0xEFFF000F: "A parameter is missing",
	0xEFFF0012: "Target error",
	0xEFFF0013: "Service unavailable",
	0xEFFF0014: "Out of resources",
	0xEFFF0016: "The session already exists",
}}

// checkPortal refuses what is not a portal the methods can take: a port
// past uint16 (their TargetPortalPortNumber) or an address with other
// than the characters of an IP address or DNS name.
func checkPortal(pt Portal) (uint16, error) {
	if pt.Port > 65535 {
		return 0, fmt.Errorf("target portal port %d is past 65535", pt.Port)
	}
	if pt.Address == "" {
		return 0, errors.New("the target portal address is empty")
	}
	for _, r := range pt.Address {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_:[]%", r)) {
			return 0, fmt.Errorf("target portal address %q is not an IP address or DNS name", pt.Address)
		}
	}
	return uint16(pt.Port), nil
}

// where names the portal in errors: address:port, the address quoted when
// it is not one the methods take.
func where(pt Portal) string {
	a := pt.Address
	if _, err := checkPortal(Portal{Address: a}); err != nil {
		a = strconv.Quote(a)
	}
	return a + ":" + strconv.FormatUint(uint64(pt.Port), 10)
}

// plain refuses a control character in a value that is not secret.
func plain(field, s string) error {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("the %s %q holds the control character %U", field, s, r)
		}
	}
	return nil
}

// secret refuses a NUL in a secret, naming the field only.
func secret(field, s string) error {
	if strings.ContainsRune(s, 0) {
		return fmt.Errorf("the %s holds a NUL character", field)
	}
	return nil
}
