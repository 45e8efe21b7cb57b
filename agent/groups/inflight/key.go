package inflight

import (
	"strconv"
	"strings"
)

// Key names what one storage operation at a time may change.
type Key struct {
	// Kind is what is held, as the refusals name it: "volume", "disk",
	// "share" or "target".
	Kind string
	// Name is how the refusals name it, e.g. the volume id or "disk 2".
	Name string
	id   string // compared
}

// Volume is the key of a volume id. Volume ids are not case-sensitive.
func Volume(id string) Key {
	return Key{Kind: "volume", Name: id, id: "volume " + strings.ToLower(id)}
}

// Disk is the key of a disk number.
func Disk(n uint32) Key {
	name := "disk " + strconv.FormatUint(uint64(n), 10)
	return Key{Kind: "disk", Name: name, id: name}
}

// Share is the key of an SMB share root (\\server\share), which is what a
// global mapping maps. UNC paths are not case-sensitive.
func Share(root string) Key {
	return Key{Kind: "share", Name: root, id: "share " + strings.ToLower(root)}
}

// Target is the key of an iSCSI target by its IQN, whichever portal
// reaches it. IQNs are not case-sensitive.
func Target(iqn string) Key {
	return Key{Kind: "target", Name: iqn, id: "target " + strings.ToLower(iqn)}
}

// String is the key as compared.
func (k Key) String() string { return k.id }
