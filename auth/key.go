package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// keyPrefix marks latch API keys so they are easy to recognise in logs and
// secret scanners.
const keyPrefix = "lk_"

// NewKey returns a new random API key: "lk_" and 32 bytes from crypto/rand
// in unpadded base64url.
func NewKey() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
	return keyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// HashKey returns the hash under which a key is stored and looked up:
// lowercase hex SHA-256. A fast hash is right here, not a password hash
// (bcrypt, argon2): keys are 256 random bits, so there is nothing to
// brute-force, and every request hashes its key.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
