package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/store"
)

// The session cookie holds a session token (token.go). Over HTTPS it is
// named with the __Host- prefix, which browsers accept only from a secure
// origin, for the whole host and no other domain.
const (
	cookieName       = "latch_console"
	secureCookieName = "__Host-latch_console"
	sessionLength    = 12 * time.Hour
)

// maxKeyLen bounds a key read from the login form (as the API bounds a
// bearer key).
const maxKeyLen = 512

// sessionID is the session id of the request's session token, "" when it
// has no valid one (token.go).
func (c *Console) sessionID(r *http.Request) string {
	for _, name := range []string{secureCookieName, cookieName} {
		if ck, err := r.Cookie(name); err == nil {
			if id := tokenSession(c.secret, ck.Value, c.cfg.Now()); id != "" {
				return id
			}
		}
	}
	return ""
}

// sessionInfo is the session a request acts in.
type sessionInfo struct {
	IDHash    string // what the store keeps of its id
	ExpiresAt time.Time
}

// identify resolves the request's session: its token, then its record in
// the store (gone after a logout, on any server), then the key it was
// opened with, as the API resolves a bearer key (gone once the key is
// deleted). auth.ErrUnknownKey when any of them is not valid.
func (c *Console) identify(r *http.Request) (auth.Identity, sessionInfo, error) {
	id := c.sessionID(r)
	if id == "" {
		return auth.Identity{}, sessionInfo{}, auth.ErrUnknownKey
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	hash := sessionIDHash(id)
	ses, err := c.cfg.Store.GetSession(ctx, &store.GetSessionParams{IDHash: hash, Now: c.cfg.Now()})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return auth.Identity{}, sessionInfo{}, auth.ErrUnknownKey
	case err != nil:
		return auth.Identity{}, sessionInfo{}, err
	}
	who, err := c.cfg.Auth.IdentifyHash(ctx, ses.KeyHash)
	return who, sessionInfo{IDHash: hash, ExpiresAt: ses.ExpiresAt}, err
}

type identityKey struct{}

type sessionKey struct{}

// withSession is ctx acting for id in session ses.
func withSession(ctx context.Context, id auth.Identity, ses sessionInfo) context.Context {
	return context.WithValue(context.WithValue(ctx, identityKey{}, id), sessionKey{}, ses)
}

// sessionFrom is the session the request acts in; session puts it there.
func sessionFrom(ctx context.Context) sessionInfo {
	s, _ := ctx.Value(sessionKey{}).(sessionInfo)
	return s
}

// identityFrom is who the request acts for; session puts it there.
func identityFrom(ctx context.Context) auth.Identity {
	id, _ := ctx.Value(identityKey{}).(auth.Identity)
	return id
}

// session runs h for a request whose cookie holds a valid session token
// of a live session of a key that is still valid, and sends any other to
// the login page (back to this page after it; a form post goes there
// plainly). /live, read by a script, gets a plain 401 instead. A disabled
// tenant's session gets a page that says so.
func (c *Console) session(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ses, err := c.identify(r)
		switch {
		case errors.Is(err, auth.ErrUnknownKey):
			clearCookie(w, r)
			switch {
			case r.URL.Path == "/live":
				http.Error(w, "log in again", http.StatusUnauthorized)
			case r.Method != http.MethodGet && r.Method != http.MethodHead:
				// A form sent after the session ended: log in again and
				// start over (its action is not a page to come back to).
				http.Redirect(w, r, "/login", http.StatusSeeOther)
			default:
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			}
			return
		case err != nil:
			c.fail(w, r, err)
			return
		case id.Disabled && !id.Admin:
			c.render(w, r, http.StatusForbidden, "error", errorPage{Title: "Tenant disabled",
				Message: "Tenant " + id.Tenant + " is disabled. Ask an administrator to enable it."})
			return
		}
		h(w, r.WithContext(withSession(r.Context(), id, ses)))
	})
}

type loginPage struct {
	Next  string
	Error string
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", loginPage{Next: localPath(r.URL.Query().Get("next"))})
}

// login checks the key of the form and opens a session: a record in the
// store and a cookie with a signed token of its id (token.go).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	next := localPath(r.PostForm.Get("next"))
	key := strings.TrimSpace(r.PostForm.Get("key"))
	if key == "" || len(key) > maxKeyLen {
		c.render(w, r, http.StatusUnprocessableEntity, "login", loginPage{Next: next, Error: "Enter an API key."})
		return
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	who, err := c.cfg.Auth.Identify(ctx, key)
	switch {
	case errors.Is(err, auth.ErrUnknownKey):
		c.render(w, r, http.StatusUnauthorized, "login", loginPage{Next: next, Error: "That key is not valid."})
		return
	case err != nil:
		c.fail(w, r, err)
		return
	case who.Disabled && !who.Admin:
		c.render(w, r, http.StatusForbidden, "login", loginPage{Next: next, Error: "That key's tenant is disabled."})
		return
	}
	name := cookieName
	if secure(r) {
		name = secureCookieName
	}
	id, exp := newSessionID(), c.cfg.Now().Add(sessionLength)
	err = c.cfg.Store.CreateSession(ctx, &store.CreateSessionParams{IDHash: sessionIDHash(id), KeyHash: auth.HashKey(key),
		ExpiresAt: exp, Now: c.cfg.Now()})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	token := sessionToken(c.secret, id, exp)
	http.SetCookie(w, &http.Cookie{Name: name, Value: token, Path: "/", MaxAge: int(sessionLength.Seconds()),
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session on the server, not only in this browser: its
// record goes, so a copy of the cookie opens nothing on any server, and
// its live streams on this server end at once (on the others, at their
// next check of the session: live).
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if id := c.sessionID(r); id != "" {
		ctx, cancel := c.storeCtx(r)
		err := c.cfg.Store.DeleteSession(ctx, &store.DeleteSessionParams{IDHash: sessionIDHash(id)})
		cancel()
		if err != nil {
			// The session lives on: say so rather than pretend.
			c.fail(w, r, err)
			return
		}
		c.streams.end(sessionIDHash(id))
	}
	clearCookie(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func clearCookie(w http.ResponseWriter, r *http.Request) {
	for _, name := range []string{cookieName, secureCookieName} {
		if _, err := r.Cookie(name); err == nil {
			http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
				Secure: name == secureCookieName || secure(r), SameSite: http.SameSiteStrictMode})
		}
	}
}

// secure reports whether the browser reached the console over HTTPS: TLS
// here, or a proxy in front that says so. (Trusting the header can only
// make the cookie stricter.)
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// localPath is next when it is a path of this site, else /executions: a
// login link must not send anyone elsewhere.
func localPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.Contains(next, `\`) || u.Scheme != "" || u.Host != "" || strings.HasPrefix(next, "/api/") {
		return "/executions"
	}
	return next
}
