package api

import "net/http"

// MaxHeaderBytes bounds a request's head — its request line and header
// fields, counted as they are sent — on every path this Server serves.
// Over it the answer is 431 headers_too_large, a problem document like
// every other refusal.
const MaxHeaderBytes = 64 << 10

// HeaderBytesBackstop is the http.Server.MaxHeaderBytes to serve this
// Server with. net/http enforces that limit itself while reading the
// request, before any handler runs, and answers a request over it with its
// own plain-text 431; so it is kept well above MaxHeaderBytes, which this
// Server enforces with a proper answer, and only remains as the hard bound
// on what one request may make the server read and hold.
const HeaderBytesBackstop = 4 * MaxHeaderBytes

// headerBytes is the size of r's head as sent: the request line, each
// header field ("Name: value\r\n"), the Host field (which net/http moves out
// of Header) and the blank line.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n + 2
}

// securityHeaders are set on every answer: the API's bodies are JSON and
// problem documents, never to be sniffed into something a browser runs.
func securityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
}
