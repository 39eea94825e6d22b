// Package kinds holds latch's built-in job kinds and registers them on a
// worker:
//
//	echo   result = payload.
//	sleep  payload {"seconds": n}, 0 <= n <= MaxRunSeconds (900): waits n
//	       seconds, or until the execution is cancelled or times out.
//	       Result {"slept_seconds": n}.
//	http   payload {"url", "method"?, "headers"?, "body"?, "timeout_seconds"?}:
//	       one HTTP request; succeeds on a 2xx answer with result
//	       {"status_code", "body"}, the body cut to 64 KiB. The request
//	       carries Latch-Execution-Id and Latch-Attempt (HeaderExecutionID,
//	       HeaderAttempt), so the target can make its effect idempotent.
//
// A payload a kind cannot use fails permanently (no retry): for the http
// kind also a header that is not a token or whose value holds a control
// character, and a redirect to a scheme other than http and https. The http
// kind retries connection errors, timeouts, names that do not resolve ("could
// not resolve <host>", without the resolver's address), 5xx and 429 answers
// (honouring a 429's Retry-After) and fails permanently on other answers.
// Its timeout_seconds is at most MaxRunSeconds, DefaultHTTPTimeout without
// it, and an answer's headers must come within HTTPHeaderTimeout: no
// built-in kind holds a worker's slot for longer than MaxRunSeconds.
//
// The hosts the http kind may call are limited by Options.HTTPAllow, or by
// the LATCH_HTTP_ALLOW environment variable when HTTPAllow is nil: a
// comma-separated list of host patterns, see ParseAllow. With neither, every
// public host is allowed. Whatever the list, the kind never connects to a
// loopback, private, link-local, multicast, unspecified or other internal
// address unless the URL's host, name or address, matches a pattern other
// than "*" (a wildcard counts). The refused ranges (why each, in addr.go):
//
//	IPv4  0.0.0.0/8 10.0.0.0/8 100.64.0.0/10 127.0.0.0/8 169.254.0.0/16
//	      172.16.0.0/12 192.0.0.0/24 192.0.2.0/24 192.88.99.0/24
//	      192.168.0.0/16 198.18.0.0/15 198.51.100.0/24 203.0.113.0/24
//	      224.0.0.0/4 240.0.0.0/4
//	IPv6  ::/128 ::1/128 ::/96 64:ff9b:1::/48 100::/64 2001::/23
//	      2001:db8::/32 2002::/16 3fff::/20 5f00::/16 fc00::/7 fe80::/10
//	      fec0::/10 ff00::/8; an IPv4-mapped (::ffff:0:0/96) or NAT64
//	      (64:ff9b::/96) address is judged by the IPv4 address inside it.
//
// The
// address is checked as the connection is dialled, after DNS, on every
// redirect hop; no proxy is used. Such a refusal fails the execution at once
// (no retry), with an error saying why, before any connection is made.
// Every redirect is also checked against the list. A payload whose headers
// set Host is refused (permanently) for a host the list names: a Host header
// would reach another virtual host behind its address.
package kinds
