package main

import (
	"context"
	"errors"
	"net/http"

	"github.com/latch-run/latch/remote"
)

// Exit codes a script can rely on: the same failure exits the same way
// from every command. README ("Exit codes") lists them.
const (
	exitOK           = 0 // done
	exitError        = 1 // any other failure: a server error, no answer, a local error
	exitUsage        = 2 // the command line is wrong, or the server refused the request as invalid
	exitNotFound     = 3 // no such execution, tenant, schedule, key or rate limit (404), or no store (migrate status)
	exitConflict     = 4 // the state forbids it (409) or a quota or limit was reached (429)
	exitDenied       = 5 // the key is missing, unknown or revoked (401), or may not do this (403)
	exitTryLater     = 6 // the server or its store is unavailable (503), or latch wait's --timeout ran out
	exitNotSucceeded = 7 // latch wait: an execution (of several: any) ended failed, cancelled or skipped
)

// exitCode is the exit code of a command that returned err.
func exitCode(err error) int {
	var p *remote.Error
	var ns errNotSucceeded
	var nf notFoundError
	var wt errWaitTimeout
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.As(err, &ns):
		return exitNotSucceeded
	case errors.As(err, &nf):
		return exitNotFound
	case errors.As(err, &wt):
		return exitTryLater
	case errors.Is(err, context.DeadlineExceeded):
		return exitTryLater
	case errors.As(err, &p):
		return exitForStatus(p.Status)
	}
	return exitError
}

// exitForStatus maps a problem answer's HTTP status to an exit code.
func exitForStatus(status int) int {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestHeaderFieldsTooLarge:
		return exitUsage
	case http.StatusNotFound:
		return exitNotFound
	case http.StatusConflict, http.StatusTooManyRequests:
		return exitConflict
	case http.StatusUnauthorized, http.StatusForbidden:
		return exitDenied
	case http.StatusServiceUnavailable:
		return exitTryLater
	}
	return exitError
}

// notFoundError is a local thing that is not there (a store's file): exit
// 3, as for a 404.
type notFoundError struct{ error }

func (e notFoundError) Unwrap() error { return e.error }
