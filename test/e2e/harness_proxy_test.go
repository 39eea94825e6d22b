package e2e

import (
	"net"
	"sync"
	"testing"
	"time"
)

// faultProxy is a TCP proxy that stands between latch and its store and
// injects network faults. Its mode is switched at run time, from any
// goroutine:
//
//   - pass through (the start);
//   - latency: every chunk read, in either direction, is held for a given
//     time before it is forwarded;
//   - blackhole: connections stay open and new ones are accepted, but
//     nothing is forwarded either way, as in a network partition: peers see
//     timeouts, not resets. What arrives meanwhile (bytes, or a peer's close)
//     is held, not dropped, as TCP would retransmit it, and delivered when
//     the blackhole ends;
//   - refuse: a new connection is reset as soon as it is accepted (open ones
//     carry on);
//
// and Cut resets every open connection at once, on both sides, leaving the
// mode as it is (new connections are still accepted unless refusing).
type faultProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	mode   proxyMode
	delay  time.Duration
	change chan struct{} // closed and replaced at every mode change
	links  map[*proxyLink]struct{}
	cuts   int // Cut calls so far: a connection accepted before one is cut too
	closed bool
}

type proxyMode int

const (
	passThrough proxyMode = iota
	latency
	blackhole
	refuse
)

// proxyLink is one proxied connection: client is the accepted side, server
// the one dialled to the target.
type proxyLink struct {
	client, server net.Conn
	once           sync.Once
	dead           chan struct{} // closed when the link ends
}

// end closes both sides; hard resets them (RST) rather than closing
// gracefully.
func (l *proxyLink) end(hard bool) {
	l.once.Do(func() {
		close(l.dead)
		for _, c := range []net.Conn{l.client, l.server} {
			if tc, ok := c.(*net.TCPConn); ok && hard {
				_ = tc.SetLinger(0)
			}
			c.Close()
		}
	})
}

// newFaultProxy listens on a free local port and forwards to target
// (host:port) until t ends.
func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, change: make(chan struct{}), links: map[*proxyLink]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// Addr is the address latch should connect to instead of target.
func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

func (p *faultProxy) PassThrough()            { p.set(passThrough, 0) }
func (p *faultProxy) Latency(d time.Duration) { p.set(latency, d) }
func (p *faultProxy) Blackhole()              { p.set(blackhole, 0) }
func (p *faultProxy) Refuse()                 { p.set(refuse, 0) }

func (p *faultProxy) set(m proxyMode, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.delay = m, d
	close(p.change) // wakes the pumps held by a blackhole
	p.change = make(chan struct{})
}

// Cut resets every open connection and returns how many there were.
func (p *faultProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts++
	for l := range p.links {
		l.end(true)
	}
	return len(p.links)
}

func (p *faultProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.ln.Close()
	for l := range p.links {
		l.end(true)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		if p.closed || p.mode == refuse {
			p.mu.Unlock()
			(&proxyLink{client: c, server: c, dead: make(chan struct{})}).end(true)
			continue
		}
		p.wg.Add(1)
		cuts := p.cuts
		p.mu.Unlock()
		go p.serve(c, cuts)
	}
}

// serve dials the target for client and pumps both ways until either side
// ends or the link is cut. cuts is p.cuts when client was accepted.
func (p *faultProxy) serve(client net.Conn, cuts int) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		(&proxyLink{client: client, server: client, dead: make(chan struct{})}).end(true)
		return
	}
	l := &proxyLink{client: client, server: server, dead: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.cuts != cuts { // cut while dialling
		p.mu.Unlock()
		l.end(true)
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	var pumps sync.WaitGroup
	pumps.Go(func() { p.pump(l, server, client) })
	pumps.Go(func() { p.pump(l, client, server) })
	pumps.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// pump copies src to dst chunk by chunk, each one (and the end of src)
// subject to the mode when it is to be forwarded.
func (p *faultProxy) pump(l *proxyLink, dst, src net.Conn) {
	defer l.end(false)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if !p.hold(l) {
			return // cut
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold waits as the mode says before a chunk is forwarded; false when the
// link ended meanwhile.
func (p *faultProxy) hold(l *proxyLink) bool {
	for {
		p.mu.Lock()
		mode, d, change := p.mode, p.delay, p.change
		p.mu.Unlock()
		var wait <-chan time.Time
		switch mode {
		case blackhole:
			wait = nil // until the mode changes
		case latency:
			wait = time.After(d)
		default:
			return true
		}
		select {
		case <-l.dead:
			return false
		case <-change:
		case <-wait:
			return true
		}
	}
}
