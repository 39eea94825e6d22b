package store

import (
	"crypto/rand"
	"encoding/hex"
)

// NewKeyID returns a new public key id: "key_" and 8 random bytes in hex.
// It is random rather than derived from the key, so showing it (in a
// listing, a log) tells nothing about the key.
func NewKeyID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
	return "key_" + hex.EncodeToString(b[:])
}

// KeyIDOrNew is id, or a new key id when id is empty.
func KeyIDOrNew(id string) string {
	if id == "" {
		return NewKeyID()
	}
	return id
}
