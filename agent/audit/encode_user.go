package audit

// Encoding a record's user block, its strings cut and its values bounded.

import (
	"slices"
	"strconv"
)

// appendUser writes u with its strings cut and its values bounded by
// MaxRecordUserValues, naming in cut what was cut.
func appendUser(b []byte, u *UserInfo, cut *cutList) []byte {
	b = append(b, `{"username":`...)
	b = appendCutString(b, u.Username, MaxRecordString, cut, "user.username")
	if u.UID != "" {
		b = append(b, `,"uid":`...)
		b = appendCutString(b, u.UID, MaxRecordString, cut, "user.uid")
	}
	budget := MaxRecordUserValues
	if len(u.Groups) > 0 {
		b = append(b, `,"groups":`...)
		b = appendValues(b, u.Groups, &budget, cut, "user.groups", "")
	}
	if len(u.Extra) > 0 {
		var buf [16]string
		keys := buf[:0]
		for k := range u.Extra {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"extra":{`...)
		left := 0
		for i, k := range keys {
			if budget <= 0 {
				left = len(keys) - i
				break
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			var c bool
			if b, c = appendCut(b, k, MaxRecordKey); c {
				cut.add("user.extra key " + shortKey(k))
			}
			b = append(b, '"', ':')
			if len(u.Extra[k]) == 0 {
				budget--
			}
			b = appendValues(b, u.Extra[k], &budget, cut, "user.extra", k)
		}
		b = append(b, '}')
		if left > 0 {
			cut.add("user.extra: " + strconv.Itoa(left) + " more keys left out")
		}
	}
	return append(b, '}')
}

// appendValues writes a list of at most *budget values, each cut, and
// takes what it wrote from the budget; nil is null, as encoding/json
// writes it. Cuts are named field, or field[key] for an extra key.
func appendValues(b []byte, l []string, budget *int, cut *cutList, field, key string) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	name := func() string {
		if key == "" {
			return field
		}
		return field + "[" + shortKey(key) + "]"
	}
	b = append(b, '[')
	for i, s := range l {
		if *budget <= 0 {
			cut.add(name() + ": " + strconv.Itoa(len(l)-i) + " more left out")
			break
		}
		*budget--
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		var c bool
		if b, c = appendCut(b, s, MaxRecordString); c {
			cut.add(name())
		}
		b = append(b, '"')
	}
	return append(b, ']')
}
