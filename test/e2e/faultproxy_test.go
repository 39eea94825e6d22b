package e2e

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestFaultProxy checks each mode of faultProxy against an echo server.
func TestFaultProxy(t *testing.T) {
	t.Parallel()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	p := newFaultProxy(t, echo.Addr().String())
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// roundTrip writes msg and reads it back within d: the error of the
	// read, if any.
	roundTrip := func(c net.Conn, msg string, d time.Duration) error {
		if _, err := c.Write([]byte(msg)); err != nil {
			return err
		}
		return expect(c, msg, d)
	}
	isTimeout := func(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

	a := dial()
	if err := roundTrip(a, "pass", time.Second); err != nil {
		t.Fatalf("pass through: %v", err)
	}

	p.Latency(100 * time.Millisecond)
	start := time.Now()
	if err := roundTrip(a, "slow", 2*time.Second); err != nil || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("latency 100ms each way: round trip in %v, %v; want ≥ 200ms", time.Since(start), err)
	}

	p.Blackhole()
	b := dial() // accepted, but nothing flows
	for _, c := range []net.Conn{a, b} {
		if err := roundTrip(c, "held", 300*time.Millisecond); !isTimeout(err) {
			t.Fatalf("blackhole: %v, want a timeout", err)
		}
	}
	p.PassThrough()
	for _, c := range []net.Conn{a, b} { // what was held arrives now
		if err := expect(c, "held", time.Second); err != nil {
			t.Fatalf("after the blackhole: %v, want the held bytes", err)
		}
	}

	if n := p.Cut(); n != 2 {
		t.Errorf("Cut reset %d connections, want 2", n)
	}
	for _, c := range []net.Conn{a, b} {
		if err := roundTrip(c, "cut", time.Second); err == nil || isTimeout(err) {
			t.Fatalf("after Cut: %v, want the connection closed", err)
		}
	}
	c := dial()
	if err := roundTrip(c, "new", time.Second); err != nil {
		t.Fatalf("a new connection after Cut: %v", err)
	}

	p.Refuse()
	// The proxy accepts and resets at once: the reset may reach the dialer
	// while its connect is still being checked (the dial itself fails), or
	// after (the first read fails). Either is a refusal; a timeout is not.
	if r, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Cleanup(func() { r.Close() })
		if err := roundTrip(r, "refused", time.Second); err == nil || isTimeout(err) {
			t.Fatalf("refuse: %v, want the connection closed", err)
		}
	} else if isTimeout(err) {
		t.Fatalf("refuse: dial: %v, want the connection closed", err)
	}
	if err := roundTrip(c, "open", time.Second); err != nil {
		t.Fatalf("refuse: an open connection: %v, want it to carry on", err)
	}
	p.PassThrough()
	if err := roundTrip(dial(), "again", time.Second); err != nil {
		t.Fatalf("pass through again: %v", err)
	}
}

// expect reads len(msg) bytes from c within d and compares them with msg.
func expect(c net.Conn, msg string, d time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(d))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, []byte(msg)) {
		return errors.New("read " + string(got) + ", want " + msg)
	}
	return nil
}
