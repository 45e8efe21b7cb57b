package identity

import (
	"fmt"
	"strings"
)

// ParseCRIEndpoint checks a --cri-endpoint value: "" or "none" disable the
// CRI (ok=false).
func ParseCRIEndpoint(v string) (endpoint string, ok bool, err error) {
	v = strings.TrimSpace(v)
	if v == "" || v == "none" {
		return "", false, nil
	}
	if !strings.HasPrefix(v, "unix://") && !strings.HasPrefix(v, "npipe://") {
		return "", false, fmt.Errorf("CRI endpoint %q: want unix:///path/to/socket or npipe:////./pipe/name, or none to disable", v)
	}
	return v, true, nil
}
