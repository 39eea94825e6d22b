package kinds

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// fakeResolver is a resolver whose DNS server knows only hosts: A and AAAA
// queries for them get their address (of the asked family), every other
// name is NXDOMAIN. It lets a test give a public-looking name any address,
// without touching the machine's DNS.
func fakeResolver(t *testing.T, hosts map[string]netip.Addr) *net.Resolver {
	t.Helper()
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serveFakeDNS(server, hosts)
		return client, nil
	}}
}

// serveFakeDNS answers queries on c in the stream (TCP) framing, which the
// Go resolver uses on a connection that is not a net.PacketConn.
func serveFakeDNS(c net.Conn, hosts map[string]netip.Addr) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		a := dnsAnswer(q, hosts)
		if a == nil {
			return
		}
		if _, err := c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(a)))); err != nil {
			return
		}
		if _, err := c.Write(a); err != nil {
			return
		}
	}
}

// dnsAnswer answers the single question of query q, or returns nil when q
// is malformed.
func dnsAnswer(q []byte, hosts map[string]netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	// The question: labels up to a zero byte, then type and class.
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	end := i + 1 + 4
	if end > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	addr, known := hosts[strings.ToLower(strings.Join(labels, "."))]

	var rdata []byte
	switch {
	case qtype == 1 && addr.Is4():
		rdata = addr.AsSlice()
	case qtype == 28 && addr.Is6():
		rdata = addr.AsSlice()
	}
	out := append([]byte{}, q[:2]...) // id
	flags := uint16(0x8180)           // a response, recursion desired and available
	if !known {
		flags |= 3 // NXDOMAIN
	}
	out = binary.BigEndian.AppendUint16(out, flags)
	out = binary.BigEndian.AppendUint16(out, 1) // questions
	answers := uint16(0)
	if rdata != nil {
		answers = 1
	}
	out = binary.BigEndian.AppendUint16(out, answers)
	out = append(out, 0, 0, 0, 0) // no authority, no additional records
	out = append(out, q[12:end]...)
	if rdata != nil {
		out = append(out, 0xc0, 12) // the question's name
		out = binary.BigEndian.AppendUint16(out, qtype)
		out = binary.BigEndian.AppendUint16(out, 1) // class IN
		out = binary.BigEndian.AppendUint32(out, 60)
		out = binary.BigEndian.AppendUint16(out, uint16(len(rdata)))
		out = append(out, rdata...)
	}
	return out
}

func TestFakeResolver(t *testing.T) {
	t.Parallel()
	r := fakeResolver(t, map[string]netip.Addr{
		"svc.internal.example": netip.MustParseAddr("127.0.0.1"),
		"v6.internal.example":  netip.MustParseAddr("::1"),
	})
	for name, want := range map[string]string{"svc.internal.example": "127.0.0.1", "v6.internal.example": "::1"} {
		got, err := r.LookupNetIP(t.Context(), "ip", name)
		if err != nil || len(got) != 1 || got[0].String() != want {
			t.Errorf("%s: %v, %v; want [%s]", name, got, err, want)
		}
	}
	if got, err := r.LookupNetIP(t.Context(), "ip", "nowhere.example"); err == nil {
		t.Errorf("nowhere.example: %v, want no such host", got)
	}
}
