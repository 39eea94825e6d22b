package kinds

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/store"
)

// secretServer is an internal service on 127.0.0.1 that answers "secret"
// and counts the requests that reached it.
type secretServer struct {
	*httptest.Server
	hits atomic.Int64
}

func newSecretServer(t *testing.T) *secretServer {
	t.Helper()
	s := &secretServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		io.WriteString(w, "secret")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *secretServer) port() string {
	u, _ := url.Parse(s.URL)
	return u.Port()
}

// callVia runs the http kind with the given allow patterns, resolving names
// with r.
func callVia(t *testing.T, allow []string, r *net.Resolver, payload string) (httpResult, error) {
	t.Helper()
	h, err := newHTTPHandler(allow, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, h, payload)
}

// wantRefused checks that err is the permanent refusal of an internal
// address, saying why.
func wantRefused(t *testing.T, what string, res httpResult, err error, why string) {
	t.Helper()
	var refused *refusedError
	if !errors.As(err, &refused) || !engine.IsPermanent(err) || !strings.Contains(err.Error(), why) ||
		!strings.Contains(err.Error(), AllowEnv) {
		t.Errorf("%s: %+v, %v; want a permanent refusal saying %q and naming %s", what, res, err, why, AllowEnv)
	}
}

// By default the http kind reaches public hosts only: a service on the
// server's own loopback is refused, before any connection, with an error
// that says why and how to allow it.
func TestHTTPRefusesLoopbackByDefault(t *testing.T) {
	t.Parallel()
	srv := newSecretServer(t)
	for _, allow := range [][]string{nil, {"*"}, {"*", "other.example"}} {
		res, err := call(t, allow, payload(t, map[string]any{"url": srv.URL + "/secret"}))
		wantRefused(t, fmt.Sprintf("allow %q", allow), res, err, "refused to connect to 127.0.0.1: loopback address")
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("the internal service was reached %d times", n)
	}
}

// Every spelling of an internal address is refused on the address dialled,
// before connecting: nothing here touches the network.
func TestHTTPRefusesInternalAddressLiterals(t *testing.T) {
	t.Parallel()
	srv := newSecretServer(t)
	p := srv.port()
	cases := map[string]string{
		"http://[::ffff:127.0.0.1]:" + p + "/": "loopback address",
		"http://[::ffff:7f00:1]:" + p + "/":    "loopback address",
		"http://0.0.0.0:" + p + "/":            "unspecified address",
		"http://[::]:" + p + "/":               "unspecified address",
		"http://[::1]:" + p + "/":              "loopback address",
		"http://[::127.0.0.1]:" + p + "/":      "IPv4-compatible",
		"http://169.254.169.254/latest/":       "link-local address",
		"http://[fe80::1%25lo]:" + p + "/":     "link-local address",
		"http://10.1.2.3/":                     "private address",
		"http://172.16.0.1/":                   "private address",
		"http://192.168.1.1/":                  "private address",
		"http://[fd00::1]/":                    "private address",
		"http://100.100.100.200/":              "shared (carrier-grade NAT) address",
		"http://224.0.0.1/":                    "multicast address",
		"http://[ff02::1]/":                    "multicast address",
		"http://255.255.255.255/":              "reserved address",
		"http://[64:ff9b::7f00:1]/":            "loopback address",
		"http://[2002:7f00:1::]/":              "6to4",
	}
	for raw, why := range cases {
		res, err := call(t, nil, payload(t, map[string]any{"url": raw}))
		wantRefused(t, raw, res, err, why)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("the internal service was reached %d times", n)
	}
}

// Spellings of the loopback address that are not IP literals in Go but
// that a resolver may read as one (getaddrinfo takes inet_aton's forms):
// whatever they resolve to is checked, so they are refused like the rest,
// when Go's resolver does not reject them as names first.
func TestHTTPLoopbackOtherSpellingsAreRefused(t *testing.T) {
	t.Parallel()
	srv := newSecretServer(t)
	spellings := []string{"localhost", "127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "localhost."}
	hosts := map[string]netip.Addr{}
	for _, h := range spellings {
		hosts[strings.TrimSuffix(h, ".")] = netip.MustParseAddr("127.0.0.1")
	}
	r := fakeResolver(t, hosts)
	for _, host := range spellings {
		raw := "http://" + host + ":" + srv.port() + "/"
		res, err := callVia(t, nil, r, payload(t, map[string]any{"url": raw}))
		if _, isDNS := errors.AsType[*net.DNSError](err); !isDNS {
			wantRefused(t, raw, res, err, "resolves to a loopback address")
		}
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("the internal service was reached %d times", n)
	}
}

// An internal host is reached when LATCH_HTTP_ALLOW names it: by address,
// by address and port, or by a name (exact or wildcard) that resolves to it.
func TestHTTPAllowsListedInternalHosts(t *testing.T) {
	t.Parallel()
	srv := newSecretServer(t)
	r := fakeResolver(t, map[string]netip.Addr{
		"svc.internal.example": netip.MustParseAddr("127.0.0.1"),
	})
	named := "http://svc.internal.example:" + srv.port() + "/secret"
	for _, c := range []struct {
		allow []string
		url   string
	}{
		{[]string{"127.0.0.1"}, srv.URL},
		{[]string{"127.0.0.1:" + srv.port()}, srv.URL},
		{[]string{"*", "127.0.0.1"}, srv.URL},
		{[]string{"127.0.0.1"}, "http://[::ffff:127.0.0.1]:" + srv.port() + "/"},
		{[]string{"svc.internal.example"}, named},
		{[]string{"*.internal.example"}, named},
		{[]string{"*", "*.internal.example"}, named},
	} {
		res, err := callVia(t, c.allow, r, payload(t, map[string]any{"url": c.url}))
		if err != nil || res.Body != "secret" {
			t.Errorf("allow %q, %s: %+v, %v; want the answer", c.allow, c.url, res, err)
		}
	}
}

// A name is checked on the addresses it resolves to: one that resolves to
// loopback is refused unless the name itself is listed. Listing its address
// does not open the name (the rule is about the host the URL names).
func TestHTTPRefusesNamesResolvingToInternalAddresses(t *testing.T) {
	t.Parallel()
	srv := newSecretServer(t)
	r := fakeResolver(t, map[string]netip.Addr{
		"rebind.public.example": netip.MustParseAddr("127.0.0.1"),
		"v6.public.example":     netip.MustParseAddr("::1"),
		"meta.public.example":   netip.MustParseAddr("169.254.169.254"),
	})
	cases := []struct {
		allow []string
		url   string
		why   string
	}{
		{nil, "http://rebind.public.example:" + srv.port() + "/", "rebind.public.example: resolves to a loopback address"},
		{[]string{"*", "other.public.example"}, "http://rebind.public.example:" + srv.port() + "/", "loopback address"},
		{[]string{"*", "127.0.0.1"}, "http://rebind.public.example:" + srv.port() + "/", "loopback address"},
		{nil, "http://v6.public.example:" + srv.port() + "/", "loopback address"},
		{nil, "http://meta.public.example/latest/meta-data/", "link-local address"},
	}
	for _, c := range cases {
		res, err := callVia(t, c.allow, r, payload(t, map[string]any{"url": c.url}))
		wantRefused(t, fmt.Sprintf("allow %q, %s", c.allow, c.url), res, err, c.why)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("the internal service was reached %d times", n)
	}
}

// Every redirect hop is checked like the first request: a listed host that
// answers 302 to an internal address does not take the kind there, whether
// the target is an address, a mapped address or a name resolving to one.
func TestHTTPRedirectToInternalAddressIsRefused(t *testing.T) {
	t.Parallel()
	secret := newSecretServer(t)
	r := fakeResolver(t, map[string]netip.Addr{
		"hooks.public.example": netip.MustParseAddr("127.0.0.1"),
		"db.public.example":    netip.MustParseAddr("127.0.0.1"),
	})
	for _, target := range []string{
		secret.URL + "/secret",
		"http://[::ffff:127.0.0.1]:" + secret.port() + "/secret",
		"http://db.public.example:" + secret.port() + "/secret",
	} {
		hop := httptest.NewServer(http.RedirectHandler(target, http.StatusFound))
		t.Cleanup(hop.Close)
		u, _ := url.Parse(hop.URL)
		// hooks.public.example is listed (it stands for a public host
		// here: the test has no other); every public host is allowed.
		first := "http://hooks.public.example:" + u.Port() + "/hook"
		res, err := callVia(t, []string{"*", "hooks.public.example"}, r, payload(t, map[string]any{"url": first}))
		wantRefused(t, "redirect to "+target, res, err, "loopback address")
	}
	if n := secret.hits.Load(); n != 0 {
		t.Errorf("the internal service was reached %d times", n)
	}
}

// A proxy in the client given to the kind (or in the environment) would
// dial for it, past the address check: the kind never uses one.
func TestHTTPIgnoresProxies(t *testing.T) {
	t.Parallel()
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		io.WriteString(w, "proxied")
	}))
	t.Cleanup(proxy.Close)
	pu, _ := url.Parse(proxy.URL)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(pu)
	r := fakeResolver(t, map[string]netip.Addr{"rebind.public.example": netip.MustParseAddr("127.0.0.1")})
	h, err := newHTTPHandler(nil, &http.Client{Transport: tr}, r)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(t, h, payload(t, map[string]any{"url": "http://rebind.public.example/"}))
	wantRefused(t, "through a proxy", res, err, "loopback address")
	if n := proxied.Load(); n != 0 {
		t.Errorf("the proxy was used %d times", n)
	}
}

// A client whose transport the kind cannot make check the addresses it
// dials is refused.
func TestHTTPClientNeedsAnHTTPTransport(t *testing.T) {
	t.Parallel()
	rt := roundTripper(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })
	if _, err := NewHTTPHandler(nil, &http.Client{Transport: rt}); err == nil {
		t.Error("a client with a custom RoundTripper was accepted")
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// On a worker, the refusal fails the execution at once: no retry, though
// attempts remain.
func TestHTTPRefusalIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := newSecretServer(t)
	e := newWorkerEnv(t, Options{HTTPAllow: []string{}})
	ex := e.submit(HTTP, payload(t, map[string]any{"url": srv.URL + "/secret"}))
	if ex.MaxAttempts < 2 {
		t.Fatalf("max attempts %d: the test needs attempts to remain", ex.MaxAttempts)
	}
	got := e.wait(ex.ID)
	if got.Status != store.StatusFailed || got.Attempt != 1 || got.Result != nil ||
		!strings.Contains(got.Error, "refused to connect to 127.0.0.1: loopback address") {
		t.Errorf("%s attempt %d/%d, result %s, error %q; want failed at once, refused as loopback",
			got.Status, got.Attempt, got.MaxAttempts, got.Result, got.Error)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("the internal service was reached %d times", n)
	}
}

// The address rule, range by range.
func TestRefusedAddressRanges(t *testing.T) {
	t.Parallel()
	refused := []string{
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.255",
		"127.0.0.1", "127.255.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.255",
		"192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.0.1", "198.18.0.1", "198.19.255.255",
		"198.51.100.7", "203.0.113.9", "224.0.0.251", "239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::7f00:1", "::a00:1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
		"64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b:1::1", "100::1", "2001::1", "2001:db8::1",
		"2002:c000:201::1", "3fff::1", "5f00::1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0",
		"fec0::1", "ff02::1", "ff0e::1",
	}
	public := []string{
		"1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
		"126.255.255.255", "128.0.0.0", "169.253.255.255", "172.15.255.255", "172.32.0.0",
		"192.0.1.1", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2606:4700:4700::1111", "2a00:1450:4001::200e", "2001:4860::8888",
	}
	for _, s := range refused {
		if _, why := refusedReason(netip.MustParseAddr(s)); why == "" {
			t.Errorf("%s: allowed, want refused", s)
		}
	}
	for _, s := range public {
		if _, why := refusedReason(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s: refused (%s), want allowed", s, why)
		}
	}
}

// The package documentation lists the refused ranges: the same as the code
// (a range named apart inside a listed one, for its reason, aside).
func TestDocListsRefusedRanges(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var documented []netip.Prefix
	for _, s := range regexp.MustCompile(`[0-9a-f.:]+/\d+`).FindAllString(string(doc), -1) {
		documented = append(documented, netip.MustParsePrefix(s))
	}
	coded := []netip.Prefix{nat64, netip.MustParsePrefix("::ffff:0:0/96")}
	for _, r := range refusedRanges {
		coded = append(coded, r.prefix)
	}
	within := func(p netip.Prefix, in []netip.Prefix) (exact, inside bool) {
		for _, q := range in {
			exact = exact || q == p
			inside = inside || q.Bits() <= p.Bits() && q.Contains(p.Addr())
		}
		return exact, inside
	}
	for _, p := range coded {
		if _, inside := within(p, documented); !inside {
			t.Errorf("%s is refused but not in doc.go", p)
		}
	}
	for _, p := range documented {
		if exact, _ := within(p, coded); !exact {
			t.Errorf("doc.go lists %s, which the code does not name", p)
		}
	}
}
