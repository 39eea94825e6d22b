package kinds

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// dialer makes the http kind's connections, refusing the internal addresses
// of refusedRanges unless the allow list names the host. The check runs in
// the dialer's Control hook, on the address of the socket about to connect:
// after DNS, for each address a name resolves to, for every connection of
// every redirect hop. So a DNS answer that changes between a check and the
// dial (rebinding) cannot slip past it, and a refused address is never
// connected to: the error is the same whether anything listens there.
type dialer struct {
	allow    *allowList
	resolver *net.Resolver // nil: the default; tests set one
}

func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	// With no proxy, addr is the URL's host and port (the default port
	// added), so the host is the one the allow list was asked about.
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	// As http.DefaultTransport's dialer.
	nd := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Resolver: d.resolver}
	if !d.allow.lists(host, port) {
		nd.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &refusedError{host: host, a: "an", why: "unreadable address"}
			}
			if a, why := refusedReason(ap.Addr()); why != "" {
				return &refusedError{host: host, a: a, why: why}
			}
			return nil
		}
	}
	return nd.DialContext(ctx, network, addr)
}

// checkedTransport returns a clone of rt (nil: http.DefaultTransport) that
// dials only through d. It fails unless rt is an *http.Transport: another
// RoundTripper's connections cannot be checked.
func checkedTransport(rt http.RoundTripper, d *dialer) (*http.Transport, error) {
	if rt == nil {
		rt = http.DefaultTransport
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("the client's Transport must be an *http.Transport, whose dialling the http kind takes over to check the addresses it connects to; it is a %T", rt)
	}
	t = t.Clone()
	// Nothing else may connect: a proxy (HTTP_PROXY, say) would reach
	// internal addresses for the kind, and so would other dial functions.
	t.Proxy, t.OnProxyConnectResponse, t.GetProxyConnectHeader = nil, nil, nil
	t.DialTLSContext = nil
	t.DialTLS = nil               //nolint:staticcheck // deprecated, but used for https when set
	t.DialContext = d.DialContext // takes priority over the deprecated Dial
	return t, nil
}
