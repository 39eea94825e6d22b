// Package kinds holds latch's built-in job kinds and registers them on a
// worker:
//
//	echo   result = payload.
//	sleep  payload {"seconds": n}: waits n seconds, or until the execution is
//	       cancelled or times out. Result {"slept_seconds": n}.
//	http   payload {"url", "method"?, "headers"?, "body"?, "timeout_seconds"?}:
//	       one HTTP request; succeeds on a 2xx answer with result
//	       {"status_code", "body"}, the body cut to 64 KiB. The request
//	       carries Latch-Execution-Id and Latch-Attempt (HeaderExecutionID,
//	       HeaderAttempt), so the target can make its effect idempotent.
//
// A payload a kind cannot use fails permanently (no retry). The http kind
// retries connection errors, timeouts, 5xx and 429 answers (honouring a 429's
// Retry-After) and fails permanently on other answers.
//
// The hosts the http kind may call are limited by Options.HTTPAllow, or by
// the LATCH_HTTP_ALLOW environment variable when HTTPAllow is nil: a
// comma-separated list of host patterns, see ParseAllow. With neither, every
// host is allowed. Every redirect is checked against the same list. While
// the list does not allow every host, a payload whose headers set Host is
// refused (permanently): the list checks the URL's host, and a Host header
// would reach another virtual host behind an allowed address.
package kinds
