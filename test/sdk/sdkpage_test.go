package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/remote"
)

// The Go side of docs/sdk.md, which shows the three SDKs side by side:
// each function here is shown there (TestSDKPageShowsTestedCode checks
// that every snippet of the page is in the file it names), and
// TestSDKPageGo runs them against `latch serve` with a remote worker.

// pageSubmitAndWait: submit with a dedup key, then wait for the result.
func pageSubmitAndWait(ctx context.Context, c *remote.Client, out io.Writer) error {
	// Submit once per order: the dedup key makes a resubmit (or a retry after
	// a lost answer) return the same execution instead of running it twice.
	e, err := c.Submit(ctx, remote.SubmitRequest{Kind: "send-invoice", Payload: map[string]int{"order": 42},
		DedupKey: "invoice-42", MaxAttempts: 5})
	if err != nil {
		return err
	}
	again, err := c.Submit(ctx, remote.SubmitRequest{Kind: "send-invoice", Payload: map[string]int{"order": 42},
		DedupKey: "invoice-42"})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, e.ExecutionID == again.ExecutionID, *again.Deduplicated) // true true

	done, err := c.Wait(ctx, e.ExecutionID) // long polls until it is terminal
	if err != nil {
		return err
	}
	fmt.Fprintln(out, done.Status, string(done.Result)) // succeeded {"sent":42}
	return nil
}

// pageFlow: a worker's flow with steps and a wait for a signal.
func pageFlow(w *latch.Worker) {
	w.Handle("ship-order", func(ctx context.Context, job *latch.Job) (any, error) {
		var p struct {
			Order int `json:"order"`
		}
		if err := job.Decode(&p); err != nil {
			return nil, latch.Permanent(err)
		}
		// Each step runs until it is recorded, then never again: a later run
		// (after a crash, a retry or a resume) takes its result from the journal.
		seat, err := latch.StepValue(ctx, job, "reserve", func(context.Context) (map[string]any, error) {
			return map[string]any{"order": p.Order, "seat": "12A"}, nil
		})
		if err != nil {
			return nil, err
		}
		// Suspends the execution until the signal comes: WaitSignal returns
		// ErrSuspended (return it), and the run that resumes it gets the data.
		raw, err := job.WaitSignal(ctx, "approval", "approve", 7*24*time.Hour)
		if errors.Is(err, latch.ErrWaitTimedOut) {
			return map[string]any{"seat": seat, "shipped": nil}, nil
		} else if err != nil {
			return nil, err
		}
		var approval struct {
			By string `json:"by"`
		}
		if err := json.Unmarshal(raw, &approval); err != nil {
			return nil, latch.Permanent(err)
		}
		shipped, err := latch.StepValue(ctx, job, "ship", func(context.Context) (map[string]string, error) {
			return map[string]string{"by": approval.By}, nil
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"seat": seat, "shipped": shipped}, nil
	})
}

// pageChildren: a parent that runs one child per item and waits for them all.
func pageChildren(w *latch.Worker) {
	w.Handle("resize", func(ctx context.Context, job *latch.Job) (any, error) {
		var p struct {
			Width int `json:"width"`
		}
		if err := job.Decode(&p); err != nil {
			return nil, latch.Permanent(err)
		}
		if p.Width <= 0 {
			return nil, latch.Permanent(errors.New("width must be positive"))
		}
		return map[string]int{"width": p.Width / 2}, nil
	})
	w.Handle("resize-all", func(ctx context.Context, job *latch.Job) (any, error) {
		var p struct {
			Images []map[string]int `json:"images"`
		}
		if err := job.Decode(&p); err != nil {
			return nil, latch.Permanent(err)
		}
		// One child execution per image, run in parallel by any worker. The
		// first run spawns them and suspends; the run their ends resume gets
		// every outcome in item order. A failed child is reported, not raised.
		outs, err := latch.Map(ctx, job, "resize", "resize", p.Images)
		if err != nil {
			return nil, err // ErrSuspended until they have all ended
		}
		resized, failed := []json.RawMessage{}, []string{}
		for _, o := range outs {
			if o.Succeeded() {
				resized = append(resized, o.Result)
			} else {
				failed = append(failed, o.Error)
			}
		}
		return map[string]any{"resized": resized, "errors": failed}, nil
	})
}

// pageEvents: a flow that waits for an event, and the publish that ends the wait.
func pageEvents(w *latch.Worker) {
	w.Handle("await-payment", func(ctx context.Context, job *latch.Job) (any, error) {
		var p struct {
			Order string `json:"order"`
		}
		if err := job.Decode(&p); err != nil {
			return nil, latch.Permanent(err)
		}
		// Waits for the event order-paid published with this order's key: an
		// event published since the submit is taken at once, otherwise the
		// execution suspends until one is.
		ev, err := job.WaitEvent(ctx, "paid", "order-paid", latch.WaitEventOptions{Key: p.Order, Timeout: 24 * time.Hour})
		if err != nil {
			return nil, err
		}
		return map[string]any{"paid": ev.Data}, nil
	})
}

func pagePublish(ctx context.Context, c *remote.Client, out io.Writer) error {
	// Resumes every execution waiting for order-paid with key order-7.
	pub, err := c.Publish(ctx, "order-paid", map[string]int{"amount": 120},
		remote.PublishOptions{Key: "order-7", IdempotencyKey: "paid-order-7"})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, pub.Resumed) // 1
	return nil
}

// pageTracedSubmit: a submit in the caller's trace.
func pageTracedSubmit(ctx context.Context, c *remote.Client, tracer trace.Tracer) (*remote.Execution, error) {
	ctx, span := tracer.Start(ctx, "checkout")
	defer span.End()
	// Every call sends the trace context of its ctx as traceparent: the
	// execution's runs, on any worker, continue the caller's trace.
	return c.Submit(ctx, remote.SubmitRequest{Kind: "call-partner", Payload: map[string]int{"order": 42},
		DedupKey: "call-partner-42"})
}

func TestSDKPageGo(t *testing.T) {
	srv := startScenarioServer(t)
	admin := remote.New(srv.url, goAdminKey)
	_, _, c := remoteTenant(t, admin, srv, "page")
	ctx := t.Context()
	w := latch.NewRemoteWorker(c, latch.WorkerOptions{Slots: 4, PollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w.Handle("send-invoice", func(ctx context.Context, job *latch.Job) (any, error) {
		var p struct {
			Order int `json:"order"`
		}
		if err := job.Decode(&p); err != nil {
			return nil, latch.Permanent(err)
		}
		return map[string]int{"sent": p.Order}, nil
	})
	pageFlow(w)
	pageChildren(w)
	pageEvents(w)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Stop(sctx); err != nil {
			t.Error(err)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// waitFor polls e until it is in status want.
	waitFor := func(id string, want remote.Status) *remote.Execution {
		t.Helper()
		for {
			e, err := c.GetWait(wctx, id, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if e.Status == want {
				return e
			}
			if e.Status.Terminal() {
				t.Fatalf("%s ended %s (%v), want %s", id, e.Status, e.Error, want)
			}
		}
	}

	t.Run("submit_and_wait", func(t *testing.T) {
		var out bytes.Buffer
		if err := pageSubmitAndWait(wctx, c, &out); err != nil {
			t.Fatal(err)
		}
		if want := "true true\nsucceeded {\"sent\":42}\n"; out.String() != want {
			t.Fatalf("printed %q, want %q", out.String(), want)
		}
	})
	t.Run("flow_step_and_signal", func(t *testing.T) {
		e, err := c.Submit(wctx, remote.SubmitRequest{Kind: "ship-order", Payload: map[string]int{"order": 7}})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(e.ExecutionID, remote.StatusSuspended)
		if _, err := c.Signal(wctx, e.ExecutionID, "approve", map[string]string{"by": "ann"}, remote.SignalOptions{}); err != nil {
			t.Fatal(err)
		}
		done := waitFor(e.ExecutionID, remote.StatusSucceeded)
		if want := `{"seat":{"order":7,"seat":"12A"},"shipped":{"by":"ann"}}`; string(done.Result) != want {
			t.Fatalf("result %s, want %s", done.Result, want)
		}
	})
	t.Run("spawn_and_wait_children", func(t *testing.T) {
		e, err := c.Submit(wctx, remote.SubmitRequest{Kind: "resize-all",
			Payload: map[string]any{"images": []map[string]int{{"width": 640}, {"width": 0}, {"width": 1024}}}})
		if err != nil {
			t.Fatal(err)
		}
		done := waitFor(e.ExecutionID, remote.StatusSucceeded)
		var got struct {
			Resized []map[string]int `json:"resized"`
			Errors  []string         `json:"errors"`
		}
		if err := json.Unmarshal(done.Result, &got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got.Resized) != "[map[width:320] map[width:512]]" || len(got.Errors) != 1 ||
			!bytes.Contains([]byte(got.Errors[0]), []byte("width must be positive")) {
			t.Fatalf("result %s", done.Result)
		}
	})
	t.Run("traced_submit", func(t *testing.T) {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		defer tp.Shutdown(context.Background())
		e, err := pageTracedSubmit(wctx, c, tp.Tracer("shop"))
		if err != nil {
			t.Fatal(err)
		}
		got := spans.GetSpans()
		if len(got) != 1 {
			t.Fatalf("%d spans, want the caller's one", len(got))
		}
		want := fmt.Sprintf("00-%s-%s-01", got[0].SpanContext.TraceID(), got[0].SpanContext.SpanID())
		if len(e.TraceParent) != 55 || e.TraceParent[3:35] != want[3:35] {
			t.Fatalf("the execution's trace_parent %q, want the trace of the caller's span %s", e.TraceParent, want)
		}
		if _, err := c.Cancel(wctx, e.ExecutionID); err != nil { // no worker here runs call-partner
			t.Fatal(err)
		}
	})
	t.Run("publish_and_wait_event", func(t *testing.T) {
		e, err := c.Submit(wctx, remote.SubmitRequest{Kind: "await-payment", Payload: map[string]string{"order": "order-7"}})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(e.ExecutionID, remote.StatusSuspended)
		var out bytes.Buffer
		if err := pagePublish(wctx, c, &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != "1\n" {
			t.Fatalf("printed %q, want 1", out.String())
		}
		done := waitFor(e.ExecutionID, remote.StatusSucceeded)
		if want := `{"paid":{"amount":120}}`; string(done.Result) != want {
			t.Fatalf("result %s, want %s", done.Result, want)
		}
	})
}
