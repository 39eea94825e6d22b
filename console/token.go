package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// A session token is what the session cookie holds:
//
//	v1.<key hash>.<expiry, Unix seconds>.<MAC>
//
// where the key hash is api.HashKey of the key logged in with (64 hex
// digits) and the MAC is HMAC-SHA256 under the console's session secret of
// everything before it. The MAC is what makes a token the console's own: a
// key hash alone, as the store keeps it (and a backup of the store holds
// it), opens nothing, and a token stops working at its expiry whatever the
// browser does with the cookie. The key itself is never in it.
const tokenVersion = "v1"

// sessionToken is the token for hash that expires at exp.
func sessionToken(secret []byte, hash string, exp time.Time) string {
	body := tokenVersion + "." + hash + "." + strconv.FormatInt(exp.Unix(), 10)
	return body + "." + base64.RawURLEncoding.EncodeToString(tokenMAC(secret, body))
}

// tokenHash is the key hash of token when the MAC is the console's and the
// token has not expired by now; "" otherwise.
func tokenHash(secret []byte, token string, now time.Time) string {
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
	if len(parts) != 3 || parts[0] != tokenVersion || !isKeyHash(parts[1]) {
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

func isKeyHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
