package kinds

import (
	"fmt"
	"net/netip"
)

// The http kind runs on the server, inside its network, on any tenant's
// behalf: it must not become a way into that network (SSRF). So, unless the
// host a request names is listed in LATCH_HTTP_ALLOW, it never connects to
// an address of these ranges (IANA's special-purpose registries, less the
// few globally reachable anycast services inside them, which an HTTP call
// has no use for):
//
//	IPv4
//	  0.0.0.0/8        "this network"; 0.0.0.0 reaches the host itself
//	  10.0.0.0/8       private (RFC 1918)
//	  100.64.0.0/10    shared address space, carrier-grade NAT (RFC 6598);
//	                   some clouds serve metadata here (100.100.100.200)
//	  127.0.0.0/8      loopback
//	  169.254.0.0/16   link-local, cloud metadata (169.254.169.254)
//	  172.16.0.0/12    private
//	  192.0.0.0/24     IETF protocol assignments
//	  192.0.2.0/24     documentation (TEST-NET-1)
//	  192.88.99.0/24   6to4 relay anycast (deprecated)
//	  192.168.0.0/16   private
//	  198.18.0.0/15    benchmarking; also used inside networks (fake-IP DNS)
//	  198.51.100.0/24  documentation (TEST-NET-2)
//	  203.0.113.0/24   documentation (TEST-NET-3)
//	  224.0.0.0/4      multicast
//	  240.0.0.0/4      reserved, and the broadcast address 255.255.255.255
//
//	IPv6
//	  ::/128           unspecified; reaches the host itself
//	  ::1/128          loopback
//	  ::ffff:0:0/96    IPv4-mapped: the IPv4 rules apply to the address inside
//	                   (it is dialled as that IPv4 address)
//	  ::/96            IPv4-compatible (deprecated), all of it
//	  64:ff9b::/96     NAT64 (RFC 6052): the IPv4 rules apply to the address
//	                   inside, which a translator would reach
//	  64:ff9b:1::/48   local-use NAT64 (RFC 8215)
//	  100::/64         discard-only
//	  2001::/23        IETF protocol assignments, Teredo (2001::/32) among them
//	  2001:db8::/32    documentation
//	  2002::/16        6to4 (deprecated): tunnels to the IPv4 address inside
//	  3fff::/20        documentation (RFC 9637)
//	  5f00::/16        segment routing (SRv6) SIDs
//	  fc00::/7         unique local: private
//	  fe80::/10        link-local
//	  fec0::/10        site-local (deprecated)
//	  ff00::/8         multicast
//
// Everything else, global unicast, is a public address.
var refusedRanges = []struct {
	prefix netip.Prefix
	a, why string // the reason is "<why> address", "<a> <why> address" in a sentence
}{
	{netip.MustParsePrefix("0.0.0.0/32"), "an", "unspecified"},
	{netip.MustParsePrefix("0.0.0.0/8"), "a", `"this network"`},
	{netip.MustParsePrefix("10.0.0.0/8"), "a", "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a", "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a", "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a", "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a", "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an", "IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a", "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a", "6to4 relay"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a", "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a", "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a", "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a", "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a", "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a", "reserved"},

	{netip.MustParsePrefix("::/128"), "an", "unspecified"},
	{netip.MustParsePrefix("::1/128"), "a", "loopback"},
	{netip.MustParsePrefix("::/96"), "an", "IPv4-compatible IPv6"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a", "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "a", "discard-only"},
	{netip.MustParsePrefix("2001:db8::/32"), "a", "documentation"},
	{netip.MustParsePrefix("2001::/32"), "a", "Teredo"},
	{netip.MustParsePrefix("2001::/23"), "an", "IETF protocol assignment"},
	{netip.MustParsePrefix("2002::/16"), "a", "6to4"},
	{netip.MustParsePrefix("3fff::/20"), "a", "documentation"},
	{netip.MustParsePrefix("5f00::/16"), "an", "SRv6"},
	{netip.MustParsePrefix("fc00::/7"), "a", "private"},
	{netip.MustParsePrefix("fe80::/10"), "a", "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "a", "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "a", "multicast"},
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// refusedReason says why the http kind refuses to connect to addr, as in
// ("a", "loopback address"), or returns "", "" for a public address.
func refusedReason(addr netip.Addr) (a, why string) {
	if !addr.IsValid() {
		return "an", "invalid address"
	}
	addr = addr.WithZone("").Unmap() // a prefix never contains an address with a zone
	if nat64.Contains(addr) {
		b := addr.As16()
		if a, why := refusedReason(netip.AddrFrom4([4]byte(b[12:]))); why != "" {
			return "a", "NAT64 form of " + a + " " + why
		}
		return "", ""
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(addr) {
			return r.a, r.why + " address"
		}
	}
	return "", ""
}

// refusedError is the http kind refusing to connect to an internal address
// (see refusedRanges) for a host not listed in LATCH_HTTP_ALLOW. It is
// returned before any connection is made, and permanent: an address the
// kind may not reach does not become reachable by trying again.
type refusedError struct {
	host   string // as the URL names it: an IP address or a name
	a, why string // refusedReason of the address dialled
}

func (e *refusedError) Error() string {
	if _, err := netip.ParseAddr(e.host); err == nil {
		return fmt.Sprintf("refused to connect to %s: %s (allow it with %s)", e.host, e.why, AllowEnv)
	}
	// The address a name resolves to is left out: the tenant reading this
	// error needs no map of the internal network.
	return fmt.Sprintf("refused to connect to %s: resolves to %s %s (allow the name with %s)",
		e.host, e.a, e.why, AllowEnv)
}
