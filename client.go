package latch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

// Client submits, reads and changes executions and tenants on one store.
// It is safe for concurrent use. Tenant arguments name the tenant acted for;
// for reads and changes of executions, "" means any tenant.
type Client struct {
	st    store.Store
	owned bool // Close closes st
}

// Store returns the store the client works on.
func (c *Client) Store() store.Store { return c.st }

// Close closes the store if Open opened it. Stop workers first.
func (c *Client) Close() error {
	if c.owned {
		return c.st.Close()
	}
	return nil
}

// Ping checks that the store answers.
func (c *Client) Ping(ctx context.Context) error { return c.st.Ping(ctx) }

// Limits of SubmitRequest fields (docs/api.md): the store's, which the
// HTTP API keeps too.
const (
	MaxKindLen     = store.MaxKindLen
	MaxDedupKeyLen = store.MaxKeyLen
)

// SubmitRequest describes an execution to submit. Zero fields take the
// stated defaults.
type SubmitRequest struct {
	// Kind names the handler that runs it. Required, 1–128 characters.
	Kind string
	// Payload is marshalled to JSON (a json.RawMessage is used as written).
	// nil: {}.
	Payload any
	// DedupKey makes the submit idempotent: while the key maps to an
	// execution (its tenant's DedupTTL after creation, or until it is
	// deleted) every submit with it returns that execution. At most 256
	// characters; "" for none.
	DedupKey string
	// Queue. Default "default".
	Queue string
	// Priority: higher runs first. Default 0.
	Priority int
	// RunAt delays the first run to this time. Zero: now. Not with Delay.
	RunAt time.Time
	// Delay delays the first run by this long. Not with RunAt.
	Delay time.Duration
	// MaxAttempts is how many times it may start. Default 3.
	MaxAttempts int
	// Timeout bounds each attempt, rounded up to whole seconds. Default 300s.
	Timeout time.Duration
	// ConcurrencyKey and ConcurrencyLimit: at most ConcurrencyLimit
	// executions with this key run at once, across all workers. Limit
	// default 1.
	ConcurrencyKey   string
	ConcurrencyLimit int
	// RateKey: starts are limited by this key's rate limit.
	RateKey string
}

// Submitted is the outcome of one item of SubmitMany. Exactly one of
// Execution and Err is set.
type Submitted struct {
	Execution    *Execution
	Deduplicated bool
	Err          error
}

// Submit admits one execution for tenant. deduplicated reports that the
// dedup key already mapped to an execution, which is returned as it is now;
// nothing new was admitted. Errors: ErrQuotaExceeded, ErrDedupKeyReused,
// ErrInvalid, ErrNotFound (no such tenant).
func (c *Client) Submit(ctx context.Context, tenant string, req SubmitRequest) (exec *Execution, deduplicated bool, err error) {
	res, err := c.SubmitMany(ctx, tenant, []SubmitRequest{req})
	if err != nil {
		return nil, false, err
	}
	return res[0].Execution, res[0].Deduplicated, res[0].Err
}

// SubmitMany admits several executions for tenant, decided one by one in
// order (two with one dedup key get one execution) and committed together.
// A refused item is reported in its Submitted.Err and does not affect the
// others; the returned error is for the whole call (an unknown tenant, a
// store failure), in which case nothing was admitted. The executions keep
// the trace context of ctx (an OpenTelemetry span's, or a remote span
// context), so that their runs join the caller's trace (docs/tracing.md).
func (c *Client) SubmitMany(ctx context.Context, tenant string, reqs []SubmitRequest) ([]Submitted, error) {
	if err := validTenantName(tenant); err != nil {
		return nil, err
	}
	out := make([]Submitted, len(reqs))
	now := time.Now()
	var items []store.Submission
	var index []int // items[i] is reqs[index[i]]
	traceParent := tracing.Current(ctx)
	for i := range reqs {
		sub, err := reqs[i].submission(now)
		if err != nil {
			out[i].Err = err
			continue
		}
		sub.TraceParent = traceParent
		items = append(items, sub)
		index = append(index, i)
	}
	if len(items) == 0 {
		return out, nil
	}
	res, err := c.st.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: items, Now: now})
	if err != nil {
		return nil, fmt.Errorf("latch: submit: %w", err)
	}
	for j, item := range res.Items {
		i := index[j]
		if item.Err != nil {
			out[i].Err = fmt.Errorf("latch: submit: %w", item.Err)
			continue
		}
		out[i].Execution = fromStoreExecution(item.Execution)
		out[i].Deduplicated = item.Deduplicated
	}
	return out, nil
}

// submission checks r and turns it into a store.Submission: the Go API's
// own rules (Delay, not both RunAt and Delay, a Timeout in whole seconds),
// then store.CheckSubmission, the rules the HTTP API applies too.
func (r *SubmitRequest) submission(now time.Time) (store.Submission, error) {
	if r.Delay < 0 {
		return store.Submission{}, invalid("delay", "negative")
	}
	if r.Delay > 0 && !r.RunAt.IsZero() {
		return store.Submission{}, invalid("run_at", "give RunAt or Delay, not both")
	}
	if r.Timeout < 0 || r.Timeout > store.MaxTimeoutSeconds*time.Second {
		return store.Submission{}, invalid("timeout", "must be at most %v", store.MaxTimeoutSeconds*time.Second)
	}
	payload, err := marshalPayload(r.Payload)
	if err != nil {
		return store.Submission{}, err
	}
	runAt := r.RunAt
	if r.Delay > 0 {
		runAt = now.Add(r.Delay)
	}
	sub := store.Submission{
		Kind:             r.Kind,
		Queue:            r.Queue,
		Priority:         r.Priority,
		Payload:          payload,
		DedupKey:         r.DedupKey,
		RunAt:            runAt,
		MaxAttempts:      r.MaxAttempts,
		TimeoutSeconds:   int((r.Timeout + time.Second - 1) / time.Second),
		ConcurrencyKey:   r.ConcurrencyKey,
		ConcurrencyLimit: r.ConcurrencyLimit,
		RateKey:          r.RateKey,
	}
	if err := store.CheckSubmission(&sub, now, store.DefaultMaxPayloadBytes); err != nil {
		return store.Submission{}, fmt.Errorf("latch: %w", err)
	}
	return sub, nil
}

func marshalPayload(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, invalid("payload", "%v", err)
	}
	canon, err := store.CanonicalJSON(raw)
	if err != nil {
		return nil, invalid("payload", "%v", err)
	}
	return canon, nil
}

// Get reads one execution. ErrNotFound if it does not exist or belongs to
// another tenant.
func (c *Client) Get(ctx context.Context, tenant, id string) (*Execution, error) {
	e, err := c.st.Get(ctx, &store.GetParams{Tenant: tenant, ID: id})
	if err != nil {
		return nil, fmt.Errorf("latch: get %s: %w", id, err)
	}
	return fromStoreExecution(e), nil
}

// Wait waits until the execution is terminal and returns it, or returns
// ctx's error. It wakes on the store's change notifications when the store
// has them and polls otherwise.
func (c *Client) Wait(ctx context.Context, tenant, id string) (*Execution, error) {
	notifier, _ := c.st.(store.Notifier)
	poll := 10 * time.Millisecond
	for {
		var changed <-chan struct{}
		if notifier != nil {
			changed = notifier.Changed()
		}
		e, err := c.Get(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		if e.Status.Terminal() {
			return e, nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("latch: wait for %s: %w", id, context.Cause(ctx))
		case <-changed:
		case <-t.C:
			poll = min(2*poll, time.Second)
		}
		t.Stop()
	}
}

// ListOptions filter and page List. Zero fields match everything.
type ListOptions struct {
	Status   Status
	Kind     string
	Queue    string
	DedupKey string
	Schedule string
	// ParentID lists the children of that execution, in spawn order
	// instead of newest first (see Client.Children).
	ParentID string
	Limit    int    // 1–500; 0 = 50
	Cursor   string // a previous Page's NextCursor; "" = the first page
}

// Page is one page of List, newest first. NextCursor is "" on the last page
// only: a page may hold fewer than Limit items, even none, while NextCursor
// is set (one call examines a bounded number of executions, see
// store.ListParams.Scan), so page until NextCursor is "".
type Page struct {
	Items      []*Execution
	NextCursor string
}

// List reads the tenant's executions newest first, one page at a time.
func (c *Client) List(ctx context.Context, tenant string, opts ListOptions) (*Page, error) {
	if opts.Status != "" && !store.Status(opts.Status).Valid() {
		return nil, invalid("status", "unknown status %q", opts.Status)
	}
	res, err := c.st.List(ctx, &store.ListParams{
		Tenant:   tenant,
		Status:   store.Status(opts.Status),
		Kind:     opts.Kind,
		Queue:    opts.Queue,
		DedupKey: opts.DedupKey,
		Schedule: opts.Schedule,
		ParentID: opts.ParentID,
		Limit:    opts.Limit,
		After:    opts.Cursor,
	})
	if err != nil {
		return nil, fmt.Errorf("latch: list: %w", err)
	}
	page := &Page{Items: make([]*Execution, len(res.Items)), NextCursor: res.Next}
	for i, e := range res.Items {
		page.Items[i] = fromStoreExecution(e)
	}
	return page, nil
}

// Cancel cancels an execution. Scheduled or queued: cancelled at once.
// Running: its handler's context is cancelled (cause ErrCancelled) at the
// worker's next heartbeat, and it ends cancelled. Terminal: unchanged.
func (c *Client) Cancel(ctx context.Context, tenant, id string) (*Execution, error) {
	e, err := c.st.Cancel(ctx, &store.CancelParams{Tenant: tenant, ID: id, Now: time.Now()})
	if err != nil {
		return nil, fmt.Errorf("latch: cancel %s: %w", id, err)
	}
	return fromStoreExecution(e), nil
}

// DeleteOptions change Delete.
type DeleteOptions struct {
	// Force deletes an unfinished execution too: it is cancelled, and its
	// quota slot and dedup key are freed at once.
	Force bool
}

// Delete removes a terminal execution (ErrNotTerminal otherwise, unless
// Force) and its dedup key.
func (c *Client) Delete(ctx context.Context, tenant, id string, opts DeleteOptions) error {
	err := c.st.Delete(ctx, &store.DeleteParams{Tenant: tenant, ID: id, Force: opts.Force, Now: time.Now()})
	if err != nil {
		return fmt.Errorf("latch: delete %s: %w", id, err)
	}
	return nil
}

// TenantOptions are a new tenant's settings; zero fields take the defaults.
type TenantOptions struct {
	MaxInflight int           // default 10000
	DedupTTL    time.Duration // default 7 days
	Retention   time.Duration // default 7 days
	// MaxStoredBytes is the storage budget in bytes; default 1 GiB.
	MaxStoredBytes int64
	// EventRetention keeps the tenant's events (and the idempotency keys
	// of their publishes); default 24 hours.
	EventRetention time.Duration
}

// TenantUpdate changes the non-nil settings of a tenant.
type TenantUpdate struct {
	MaxInflight *int
	DedupTTL    *time.Duration
	Retention   *time.Duration
	// MaxStoredBytes below StoredBytes refuses what adds bytes until
	// enough are released.
	MaxStoredBytes *int64
	// EventRetention applies to events published from then on.
	EventRetention *time.Duration
}

func validTenantName(name string) error {
	if !store.ValidTenantName(name) {
		return invalid("tenant", "%q: want 1-64 of [a-z0-9_-]", name)
	}
	return nil
}

// CreateTenant creates a tenant. An embedded program needs no API key; the
// HTTP server adds keys with the store's AddAPIKey. ErrTenantExists if the
// name is taken.
func (c *Client) CreateTenant(ctx context.Context, name string, opts TenantOptions) (*Tenant, error) {
	if err := validTenantName(name); err != nil {
		return nil, err
	}
	t, err := c.st.CreateTenant(ctx, &store.CreateTenantParams{
		Name:        name,
		MaxInflight: opts.MaxInflight,
		DedupTTL:    opts.DedupTTL,
		Retention:   opts.Retention,
		Now:         time.Now(),

		MaxStoredBytes: opts.MaxStoredBytes,
		EventRetention: opts.EventRetention,
	})
	if err != nil {
		return nil, fmt.Errorf("latch: create tenant %s: %w", name, err)
	}
	return fromStoreTenant(t), nil
}

// EnsureTenant returns the tenant, creating it with opts if it does not
// exist. An existing tenant's settings are left as they are.
func (c *Client) EnsureTenant(ctx context.Context, name string, opts TenantOptions) (*Tenant, error) {
	t, err := c.CreateTenant(ctx, name, opts)
	if errors.Is(err, ErrTenantExists) {
		return c.GetTenant(ctx, name)
	}
	return t, err
}

// GetTenant reads a tenant, with its current inflight count.
func (c *Client) GetTenant(ctx context.Context, name string) (*Tenant, error) {
	t, err := c.st.GetTenant(ctx, &store.GetTenantParams{Name: name})
	if err != nil {
		return nil, fmt.Errorf("latch: get tenant %s: %w", name, err)
	}
	return fromStoreTenant(t), nil
}

// UpdateTenant changes a tenant's settings and returns it.
func (c *Client) UpdateTenant(ctx context.Context, name string, u TenantUpdate) (*Tenant, error) {
	t, err := c.st.UpdateTenant(ctx, &store.UpdateTenantParams{
		Name:        name,
		MaxInflight: u.MaxInflight,
		DedupTTL:    u.DedupTTL,
		Retention:   u.Retention,

		MaxStoredBytes: u.MaxStoredBytes,
		EventRetention: u.EventRetention,
	})
	if err != nil {
		return nil, fmt.Errorf("latch: update tenant %s: %w", name, err)
	}
	return fromStoreTenant(t), nil
}
