package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// A session token is what the session cookie holds:
//
//	v2.<session id>.<expiry, Unix seconds>.<MAC>
//
// where the session id is 32 random bytes (unpadded base64url) naming the
// session's record in the store, and the MAC is HMAC-SHA256 under the
// console's session secret of everything before it. The record (the hash
// of the id, the hash of the key logged in with, the expiry) is what makes
// a session live: logging out deletes it, so a copy of the cookie stops
// working on every server at once. The MAC makes a token the console's own
// before the store is asked; the store holds only the id's hash, so a
// backup of it opens nothing. Neither the key nor its hash is in the token.
const tokenVersion = "v2"

// newSessionID returns a new random session id.
func newSessionID() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// sessionIDHash is what the store keeps of a session id.
func sessionIDHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// sessionToken is the token of session id that expires at exp.
func sessionToken(secret []byte, id string, exp time.Time) string {
	body := tokenVersion + "." + id + "." + strconv.FormatInt(exp.Unix(), 10)
	return body + "." + base64.RawURLEncoding.EncodeToString(tokenMAC(secret, body))
}

// tokenSession is the session id of token when the MAC is the console's
// and the token has not expired by now; "" otherwise.
func tokenSession(secret []byte, token string, now time.Time) string {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return ""
	}
	body, sig := token[:i], token[i+1:]
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(mac, tokenMAC(secret, body)) {
		return ""
	}
	parts := strings.Split(body, ".")
	if len(parts) != 3 || parts[0] != tokenVersion || !isSessionID(parts[1]) {
		return ""
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || now.Unix() >= exp {
		return ""
	}
	return parts[1]
}

func tokenMAC(secret []byte, body string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// isSessionID reports whether s is 32 bytes in unpadded base64url.
func isSessionID(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 32
}
