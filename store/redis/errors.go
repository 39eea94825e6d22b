package redis

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// interpretError maps a driver error onto the store's sentinels, keeping
// the original in the chain: a server that cannot be reached or is not
// ready (see unavailable) is store.ErrUnavailable; the context's own
// errors and errors that already wrap a sentinel pass through; anything
// else is returned as it is.
func interpretError(err error) error { return driverErrors.Interpret(err) }

var driverErrors = store.DriverErrors{Unavailable: unavailable}

// unavailableReplies are the prefixes of the error replies of a server that
// is there but cannot serve yet: loading its data set after a restart
// (LOADING), a replica without its master (MASTERDOWN), a cluster slot
// moving or the cluster down (TRYAGAIN, CLUSTERDOWN), a failover that made
// the node a replica (READONLY), a script running past its time (BUSY).
var unavailableReplies = []string{"LOADING ", "MASTERDOWN ", "TRYAGAIN ", "CLUSTERDOWN ", "READONLY ", "BUSY "}

// unavailable reports an error of the server's absence rather than of the
// operation: the connection refused, reset or closed (io.EOF), a dial or
// network timeout, the client or the Store closed (this process is
// stopping), the pool exhausted past its timeout, or one of
// unavailableReplies.
func unavailable(err error) bool {
	var re goredis.Error
	if errors.As(err, &re) { // an error reply
		msg := re.Error()
		for _, p := range unavailableReplies {
			if strings.HasPrefix(msg, p) || msg == strings.TrimSpace(p) {
				return true
			}
		}
		return false // any other answer of a server that is there
	}
	var ne net.Error
	return errors.Is(err, errClosed) || errors.Is(err, goredis.ErrClosed) || errors.Is(err, goredis.ErrPoolTimeout) ||
		errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// status reads the status word scripts answer first and maps the refusals
// onto the store's sentinels: the scripts' half of the error contract, as
// interpretError is the driver's. what names the object for the message.
func status(arr []any, what string) error {
	if len(arr) == 0 {
		return errors.New("redis: empty script reply")
	}
	code, _ := arr[0].(string)
	switch code {
	case "OK":
		return nil
	case "NOTFOUND":
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	case "LEASELOST":
		return fmt.Errorf("%s: %w", what, store.ErrLeaseLost)
	case "NOTTERMINAL":
		return fmt.Errorf("%s is %v: %w", what, at(arr, 1), store.ErrNotTerminal)
	case "EXISTS":
		return fmt.Errorf("%s: %w", what, store.ErrTenantExists)
	case "KEYEXISTS":
		return fmt.Errorf("%s: api key hash already stored: %w", what, store.ErrExists)
	case "QUOTA":
		return fmt.Errorf("%s: tenant has %v in flight: %w", what, at(arr, 1), store.ErrQuotaExceeded)
	case "STORAGE":
		return fmt.Errorf("%s: %v bytes more would pass the tenant's storage budget: %w", what, at(arr, 1), store.ErrStorageExceeded)
	case "LIMIT":
		return fmt.Errorf("%s has %v schedules: %w", what, at(arr, 1), store.ErrScheduleLimit)
	case "NOTACTIVE":
		return fmt.Errorf("%s is %v: %w", what, at(arr, 1), store.ErrNotActive)
	case "NOTFAILED":
		return fmt.Errorf("%s is %v: %w", what, at(arr, 1), store.ErrNotFailed)
	case "TOOMANYSTEPS":
		return fmt.Errorf("%s holds %v steps: %w", what, at(arr, 1), store.ErrTooManySteps)
	case "JOURNALTOOLARGE":
		return fmt.Errorf("%s holds %v bytes of steps, and this step would pass their bound: %w", what, at(arr, 1),
			store.ErrJournalTooLarge)
	case "BUFFERFULL":
		return fmt.Errorf("%s keeps %v signals: %w", what, at(arr, 1), store.ErrSignalBufferFull)
	case "TOOMANYCHILDREN":
		return fmt.Errorf("%s: %v: %w", what, at(arr, 1), store.ErrTooManyChildren)
	case "INVALID":
		return fmt.Errorf("%w: %s: %v", store.ErrInvalid, what, at(arr, 1))
	case "IDEXISTS":
		return fmt.Errorf("%s: execution id %v: %w", what, at(arr, 1), store.ErrExists)
	}
	return fmt.Errorf("redis: unexpected script status %v", arr[0])
}
