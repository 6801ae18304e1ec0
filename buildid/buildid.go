// Package buildid defines ID, the build-id that identifies a binary's exact
// contents, shared by every perfcheck package: perfdata records it,
// buildidcache looks files up by it, check and pprofout report it.
//
// It is a package of its own so that buildidcache, which must not depend
// on the perf.data decoder, and perfdata use the same type.
package buildid

import (
	"bytes"
	"encoding/hex"
	"fmt"
)

// ID is a build-id: the descriptor bytes of an NT_GNU_BUILD_ID note, as the
// binary carries it and perf records it. It is usually 20 bytes (SHA-1),
// but 16 (MD5/UUID), 8 (lld's --build-id=fast) and any other length are
// valid. A nil or all-zero ID means "no build-id".
type ID []byte

// String returns the build-id as lowercase hex, the form perf, elfutils and
// debuginfod use in output, file names and URLs.
func (id ID) String() string { return hex.EncodeToString(id) }

// MarshalText makes an ID appear as its hex form in JSON.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the hex form; empty text gives a nil ID, so that
// what MarshalText wrote for "no build-id" reads back.
func (id *ID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = nil
		return nil
	}
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// IsZero reports whether id is empty or all zero bytes: perf writes zeros
// where it has no build-id.
func (id ID) IsZero() bool {
	for _, c := range id {
		if c != 0 {
			return false
		}
	}
	return true
}

// Parse parses a build-id written in hex; upper case is accepted. It is the
// inverse of String for any non-empty ID. The empty string is an error, not
// a nil ID: a caller asking for a build-id by name has named none, and "no
// build-id" is written as a nil ID, never parsed.
func Parse(s string) (ID, error) {
	if s == "" || len(s)%2 != 0 {
		return nil, fmt.Errorf("build-id %q: want an even number of hex digits", s)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("build-id %q: %w", s, err)
	}
	return ID(b), nil
}

// Matches reports whether id and o name the same binary. They match when
// they are equal, or when the longer one is the shorter one followed only by
// zero bytes: perf before 5.9 stored every build-id in a 20-byte field and
// wrote no length, so a 16- or 8-byte build-id comes back from such a
// perf.data zero-padded (build_id__init in tools/perf/util/build-id.c).
// An all-zero build-id matches nothing.
func (id ID) Matches(o ID) bool {
	if id.IsZero() || o.IsZero() {
		return false
	}
	short, long := id, o
	if len(short) > len(long) {
		short, long = long, short
	}
	return bytes.Equal(short, long[:len(short)]) && long[len(short):].IsZero()
}
