package kinds

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ParseAllow parses a comma-separated list of host patterns, as found in
// LATCH_HTTP_ALLOW. Each pattern is one of:
//
//   - every host
//     api.example.com     exactly this host, any port
//     *.example.com       any subdomain of example.com (not example.com itself)
//     api.example.com:8443, *.example.com:443, [::1]:8080
//     the same, on this port only (a URL without a port
//     uses its scheme's: 80 for http, 443 for https)
//
// Hosts compare case-insensitively; IP addresses are written as in URLs.
// Empty items are ignored, so "" gives an empty list (every host allowed).
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
	host     string // lower case, no brackets; "" with any
	wildcard bool   // host is a suffix: match "*."+host
	any      bool   // "*"
	port     string // "" = any port
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
	case strings.Contains(hp.host, "*"):
		return bad("a wildcard is allowed only as a leading \"*.\"")
	case strings.Trim(hp.host, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "":
		return bad("not a host name, IP address or port")
	}
	return hp, nil
}

// allowList decides which URLs the http kind may call.
type allowList struct {
	patterns []hostPattern // empty: everything
}

func newAllowList(patterns []string) (*allowList, error) {
	var errs []error
	a := &allowList{}
	for _, p := range patterns {
		hp, err := parsePattern(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if hp.any {
			return &allowList{}, nil
		}
		a.patterns = append(a.patterns, hp)
	}
	return a, errors.Join(errs...)
}

// all reports whether the list allows every host.
func (a *allowList) all() bool { return len(a.patterns) == 0 }

func (a *allowList) allows(u *url.URL) bool {
	if a.all() {
		return true
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	isIP := net.ParseIP(host) != nil
	for _, p := range a.patterns {
		if p.port != "" && p.port != port {
			continue
		}
		if p.wildcard {
			if isIP {
				continue // wildcards match domain names only
			}
			if strings.HasSuffix(host, "."+p.host) {
				return true
			}
		} else if host == p.host {
			return true
		}
	}
	return false
}
