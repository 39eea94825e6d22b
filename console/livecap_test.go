package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/console"
)

// ended waits for s to end; it fails the test when it outlives wait.
func (s *stream) ended(wait time.Duration, what string) {
	s.t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-s.lines:
			if !ok {
				return
			}
		case <-timer.C:
			s.t.Fatalf("a live stream is still open %v after %s", wait, what)
		}
	}
}

// TestLiveStreamsPerSession: one session holds at most MaxStreamsPerSession
// live streams on a server (the rule of the API's event streams); one more
// is refused with 429, another session is not held back, and a slot
// frees when its stream ends.
func TestLiveStreamsPerSession(t *testing.T) {
	e := newEnv(t, func(c *console.Config) { c.MaxStreamsPerSession = 3 })
	key := e.tenant("a")
	b := e.browser()
	b.login(key)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var open []context.CancelFunc
	for range 3 {
		sctx, stop := context.WithCancel(ctx)
		open = append(open, stop)
		if l := b.live(sctx).next(5 * time.Second); l != ": live" {
			t.Fatalf("a stream under the cap starts with %q", l)
		}
	}
	if code, retry := b.liveStatus(ctx); code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("a fourth stream of one session: %d (Retry-After %q), want 429", code, retry)
	}
	other := e.browser()
	other.login(key)
	if l := other.live(ctx).next(5 * time.Second); l != ": live" {
		t.Fatalf("another session of the same key is held back: %q", l)
	}
	open[0]()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := b.liveStatus(ctx)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a slot did not free when its stream ended: %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.console.Close()
}

// liveStatus opens /live and answers its status and Retry-After, then
// closes it.
func (b *browser) liveStatus(ctx context.Context) (int, string) {
	b.e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.e.srv.URL+"/live", nil)
	res, err := b.client.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Retry-After")
}

// TestLiveEndsAtLogout: logging out ends the session's live streams at
// once, not another session's; a logout on another server sharing the
// store ends them at their next check of the session; a session that
// expires ends them too.
func TestLiveEndsAtLogout(t *testing.T) {
	var clock atomic.Pointer[time.Time]
	now := time.Now()
	clock.Store(&now)
	secret := []byte("a secret the servers share, 32 b")
	e := newEnv(t, func(c *console.Config) {
		c.Now = func() time.Time { return *clock.Load() }
		c.PollInterval = 50 * time.Millisecond
		c.SessionSecret = secret
	})
	key := e.tenant("a")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	b, other := e.browser(), e.browser()
	b.login(key)
	other.login(key)
	s1, s2, kept := b.live(ctx), b.live(ctx), other.live(ctx)
	for _, s := range []*stream{s1, s2, kept} {
		if l := s.next(5 * time.Second); l != ": live" {
			t.Fatalf("first line %q", l)
		}
	}
	if p := b.do("POST", "/logout", nil); p.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", p.status)
	}
	s1.ended(2*time.Second, "its session logged out")
	s2.ended(2*time.Second, "its session logged out")
	if l := kept.next(2 * time.Second); l == "" {
		t.Fatal("another session's stream ended with the logout")
	}

	// Another server on the store, sharing the session secret: a logout
	// there ends this server's streams of the session at their next poll.
	third := e.browser()
	third.login(key)
	elsewhere := third.live(ctx)
	if l := elsewhere.next(5 * time.Second); l != ": live" {
		t.Fatalf("first line %q", l)
	}
	authn := auth.Authenticator{Store: e.store, AdminKeyHash: auth.HashKey(e.admin)}
	other2 := httptest.NewServer(console.New(console.Config{Store: e.store, Auth: authn, SessionSecret: secret}))
	defer other2.Close()
	req, _ := http.NewRequest("POST", other2.URL+"/logout", nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	u, _ := url.Parse(e.srv.URL)
	for _, ck := range third.client.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	res, err := third.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout on the other server: %d", res.StatusCode)
	}
	elsewhere.ended(5*time.Second, "its session logged out on another server")

	later := now.Add(12*time.Hour + time.Second)
	clock.Store(&later)
	kept.ended(5*time.Second, "its session expired")
	e.console.Close()
}
