package guard

import (
	"hash/maphash"
	"slices"
	"sync/atomic"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// userKey is every caller field the record's user block is made of
// (userInfo reads nothing else), so that two callers with equal keys and
// notes have byte-identical user blocks.
type userKey struct {
	source, processStart, sid, sidSource, containerID string
	podUID, podName, namespace, serviceAccount        string
	tokenUser                                         string
	pid                                               int
	uid, gid                                          int64
}

func keyOf(c *identity.Caller) userKey {
	return userKey{
		source: c.Source, processStart: c.ProcessStart, sid: c.SID, sidSource: c.SIDSource, containerID: c.ContainerID,
		podUID: c.PodUID, podName: c.PodName, namespace: c.Namespace, serviceAccount: c.ServiceAccount,
		tokenUser: c.TokenUser, pid: c.PID, uid: c.UID, gid: c.GID,
	}
}

// userSlots is the size of the user cache: comfortably more than the
// connections that call at once on a node.
const userSlots = 64

// userCache keeps the encoded user block of recent callers, one slot per
// connection (by the address of the connection's caller), so that the
// requests of a connection encode their caller once. A slot is used only
// when the request's final caller (after pod resolution and token
// verification, which may change from one request to the next on the same
// connection) has the same key and notes as the one it was made for;
// otherwise the block is made again and replaces it. Entries are never
// changed once stored. It is safe for concurrent use.
type userCache struct {
	seed  maphash.Seed
	slots [userSlots]atomic.Pointer[userEntry]
}

type userEntry struct {
	key   userKey
	notes []string
	user  *audit.EncodedUser
}

func newUserCache() *userCache { return &userCache{seed: maphash.MakeSeed()} }

// get returns the user block of caller c, on the connection whose caller
// is conn (nil when the connection has none).
func (uc *userCache) get(conn, c *identity.Caller) *audit.EncodedUser {
	k := keyOf(c)
	slot := &uc.slots[maphash.Comparable(uc.seed, conn)%userSlots]
	if e := slot.Load(); e != nil && e.key == k && slices.Equal(e.notes, c.Notes) {
		return e.user
	}
	notes := slices.Clone(c.Notes)
	u := audit.EncodeUser(userInfo(k, notes))
	slot.Store(&userEntry{key: k, notes: notes, user: u})
	return u
}
