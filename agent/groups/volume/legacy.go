package volume

import (
	"strconv"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
)

// parseDiskID reads the disk number that v1alpha1, v1beta1 and v1beta2 send
// as a string in field.
func parseDiskID(field, id string) (uint32, error) {
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return 0, apierr.Invalidf(field, "%s is not a disk number: send the decimal number of the disk, e.g. \"2\"", confine.Quote(id))
	}
	return uint32(n), nil
}
