package identity

import (
	"net"

	"github.com/pipeguard/pipeguard/internal/option"
)

// OptionCRIEndpoint is the key of CRIOptions.Endpoint, the option the
// callers' notes name (see package option).
const OptionCRIEndpoint = "identity.cri.endpoint"

// NoteNoCRI is the note of a Windows caller when no CRI endpoint is
// configured. Callers carry it naming the option by its Go name;
// WithNamer names it as a command does.
var NoteNoCRI = option.Sprintf("no CRI endpoint is configured (%s), so Windows processes are not mapped to containers and pods: pod fields stay empty",
	option.Name{Key: OptionCRIEndpoint, Field: "CRIOptions.Endpoint"})

// noteNoCRI is NoteNoCRI as callers carry it.
var noteNoCRI = NoteNoCRI.String()

// WithNamer returns peer (nil: Peer) whose callers' notes name the options
// they name as n names them (the agent names its flags), for the audit
// records that hold them. It goes around the other wrappers, WithCRI
// among them, which know the notes by their Go names.
func WithNamer(peer PeerFunc, n option.Namer) PeerFunc {
	if peer == nil {
		peer = Peer
	}
	if n == nil {
		return peer
	}
	named := NoteNoCRI.Render(n)
	return func(conn net.Conn) (*Caller, func(), error) {
		c, release, err := peer(conn)
		if c != nil {
			for i, note := range c.Notes {
				if note == noteNoCRI {
					c.Notes[i] = named
				}
			}
		}
		return c, release, err
	}
}
