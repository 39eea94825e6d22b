package kinds

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// ParseAllow parses a comma-separated list of host patterns, as found in
// LATCH_HTTP_ALLOW. Each pattern is one of:
//
//	pattern               matches
//	*                     every public host (see below)
//	api.example.com       exactly this host, any port
//	*.example.com         any subdomain of example.com (not example.com itself)
//	10.0.0.5, [fd00::5]   this IP address (an IPv4-mapped IPv6 address is the
//	                      IPv4 address)
//	api.example.com:8443, *.example.com:443, [::1]:8080
//	                      the same, on this port only (a URL without a port
//	                      uses its scheme's: 80 for http, 443 for https)
//
// Hosts compare case-insensitively; IP addresses are written as in URLs.
// Empty items are ignored, so "" gives an empty list, which is the same as
// "*": every public host.
//
// Whatever the list, the http kind never connects to a loopback, private,
// link-local or other internal address (see the package documentation)
// unless the URL's host matches a pattern other than "*": naming a host, or
// a wildcard of its domain, is what lets the kind reach it inside the
// network.
func ParseAllow(s string) ([]string, error) {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		if item == "" {
			continue
		}
		if _, err := parsePattern(item); err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, nil
}

// hostPattern is one parsed allow pattern.
type hostPattern struct {
	host     string     // lower case, no brackets; "" with any
	ip       netip.Addr // host as an IP address (unmapped, no zone), if it is one
	wildcard bool       // host is a suffix: match "*."+host
	any      bool       // "*"
	port     string     // "" = any port
}

func parsePattern(p string) (hostPattern, error) {
	p = strings.ToLower(strings.TrimSpace(p))
	if p == "*" {
		return hostPattern{any: true}, nil
	}
	bad := func(why string) (hostPattern, error) {
		return hostPattern{}, fmt.Errorf("host pattern %q: %s", p, why)
	}
	host, port := p, ""
	if h, pt, err := net.SplitHostPort(p); err == nil {
		host, port = h, pt
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return bad("port must be 1-65535")
		}
	} else if strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]") {
		host = p[1 : len(p)-1]
	}
	if strings.HasPrefix(p, "[") && net.ParseIP(host) == nil {
		return bad("brackets hold an IPv6 address")
	}
	hp := hostPattern{host: strings.TrimSuffix(host, "."), port: port}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		hp.host, hp.wildcard = rest, true
	}
	switch {
	case hp.host == "":
		return bad("empty host")
	case net.ParseIP(hp.host) != nil:
		if hp.wildcard {
			return bad("a wildcard needs a domain name, not an IP address")
		}
		hp.ip = netip.MustParseAddr(hp.host).Unmap() // ParseIP took it: no zone
	case strings.Contains(hp.host, "*"):
		return bad("a wildcard is allowed only as a leading \"*.\"")
	case strings.Trim(hp.host, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "":
		return bad("not a host name, IP address or port")
	}
	return hp, nil
}

// allowList decides which hosts the http kind may call, and which of them
// it may reach on an internal address.
type allowList struct {
	any      bool          // "*" or no pattern: every public host
	patterns []hostPattern // the hosts listed, without "*"
}

func newAllowList(patterns []string) (*allowList, error) {
	var errs []error
	a := &allowList{}
	for _, p := range patterns {
		hp, err := parsePattern(p)
		switch {
		case err != nil:
			errs = append(errs, err)
		case hp.any:
			a.any = true
		default:
			a.patterns = append(a.patterns, hp)
		}
	}
	if len(patterns) == 0 {
		a.any = true
	}
	return a, errors.Join(errs...)
}

// allows reports whether the http kind may call u (on a public address, or
// on any address if u's host is listed).
func (a *allowList) allows(u *url.URL) bool {
	return a.any || a.listsURL(u)
}

// listsURL reports whether a pattern other than "*" matches u's host and
// port (a URL without a port has its scheme's).
func (a *allowList) listsURL(u *url.URL) bool {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return a.lists(u.Hostname(), port)
}

// lists reports whether host (a name or an IP address, without brackets)
// on port matches a pattern other than "*": the kind may reach it on an
// internal address.
func (a *allowList) lists(host, port string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	ip, ipErr := netip.ParseAddr(host)
	for _, p := range a.patterns {
		if p.port != "" && p.port != port {
			continue
		}
		switch {
		case p.ip.IsValid():
			if ipErr == nil && ip.WithZone("").Unmap() == p.ip {
				return true
			}
		case ipErr == nil:
			// names, and wildcards, match names only
		case p.wildcard:
			if strings.HasSuffix(host, "."+p.host) {
				return true
			}
		case host == p.host:
			return true
		}
	}
	return false
}
