package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Lines splits command output into its non-empty, trimmed lines.
func Lines(out []byte) []string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// DecodeJSONList decodes ConvertTo-Json output into a slice. PowerShell emits
// a bare object for one result, an array for several, nothing for none.
func DecodeJSONList[T any](out []byte) ([]T, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return nil, nil
	}
	var list []T
	if out[0] == '[' {
		if err := json.Unmarshal(out, &list); err != nil {
			return nil, fmt.Errorf("parsing command output %q: %w", out, err)
		}
		return list, nil
	}
	var one T
	if err := json.Unmarshal(out, &one); err != nil {
		return nil, fmt.Errorf("parsing command output %q: %w", out, err)
	}
	return []T{one}, nil
}
