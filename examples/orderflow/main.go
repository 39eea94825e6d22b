// Command orderflow is latch's example flow: an order that reserves stock
// and charges a card (steps), waits up to 24 hours for a human approval (a
// signal), ships its parcels in parallel and waits for all of them (child
// executions), sleeps until its delivery window, then sends a webhook (a
// step).
// Any of its processes may be killed at any point: the card is charged
// once and no recorded step runs again (docs/flows.md).
//
//	go run ./examples/orderflow demo                 # everything in one process
//	go run ./examples/orderflow worker -store URL    # a worker; run several
//	go run ./examples/orderflow submit -store URL -shop URL -id o-1
//	go run ./examples/orderflow approve -store URL -by ann EXECUTION_ID
//	go run ./examples/orderflow show -store URL EXECUTION_ID
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/latch-run/latch"
)

// tenant is the tenant the example's orders belong to.
const tenant = "shop"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "demo":
		err = demo(ctx, args, os.Stdout)
	case "worker":
		err = worker(ctx, args)
	case "submit":
		err = submit(ctx, args)
	case "approve":
		err = approve(ctx, args)
	case "show":
		err = show(ctx, args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "orderflow:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: orderflow demo|worker|submit|approve|show [flags]")
	os.Exit(2)
}

// open opens the store and makes sure the example's tenant exists.
func open(ctx context.Context, url string) (*latch.Client, error) {
	c, err := latch.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	if _, err := c.EnsureTenant(ctx, tenant, latch.TenantOptions{}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// newWorker returns a worker that runs orders and their parcels.
func newWorker(c *latch.Client, lease time.Duration, log *slog.Logger) *latch.Worker {
	w := c.NewWorker(latch.WorkerOptions{LeaseDuration: lease, Logger: log})
	w.Handle("order", handleOrder)
	w.Handle("parcel", handleParcel)
	return w
}

func worker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	url := fs.String("store", "sqlite:orderflow.db", "store URL")
	lease := fs.Duration("lease", 30*time.Second, "lease of each run: how soon a killed worker's order runs elsewhere")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := open(ctx, *url)
	if err != nil {
		return err
	}
	defer c.Close()
	w := newWorker(c, *lease, slog.Default())
	if err := w.Start(ctx); err != nil {
		return err
	}
	fmt.Println("worker", w.ID(), "running")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.Stop(sctx)
}

func submit(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("submit", flag.ExitOnError)
	url := fs.String("store", "sqlite:orderflow.db", "store URL")
	o := Order{}
	fs.StringVar(&o.ID, "id", "o-1", "order id (also the dedup key: submitting it again is a no-op)")
	fs.IntVar(&o.Amount, "amount", 4200, "amount in cents")
	fs.StringVar(&o.Shop, "shop", "http://127.0.0.1:8090", "base URL of the shop's services")
	delivery := fs.Duration("delivery", 3*time.Second, "delivery window opens this long from now")
	parcels := fs.Int("parcels", 3, "parcels of the order, shipped in parallel")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.DeliveryAt = time.Now().Add(*delivery).UTC()
	o.Parcels = parcelIDs(o.ID, *parcels)
	c, err := open(ctx, *url)
	if err != nil {
		return err
	}
	defer c.Close()
	x, _, err := c.Submit(ctx, tenant, latch.SubmitRequest{Kind: "order", Payload: o, DedupKey: "order:" + o.ID, MaxAttempts: 10})
	if err != nil {
		return err
	}
	fmt.Println(x.ID)
	return nil
}

func approve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("approve", flag.ExitOnError)
	url := fs.String("store", "sqlite:orderflow.db", "store URL")
	by := fs.String("by", "ann", "who approves")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("approve takes one execution id")
	}
	c, err := open(ctx, *url)
	if err != nil {
		return err
	}
	defer c.Close()
	id := fs.Arg(0)
	// The key makes a double click (or a retried request) one approval.
	delivered, err := c.Signal(ctx, tenant, id, "approve", Approval{By: *by}, latch.SignalOptions{IdempotencyKey: "approve:" + id})
	if err != nil {
		return err
	}
	fmt.Println("approval delivered:", delivered)
	return nil
}

func show(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("show", flag.ExitOnError)
	url := fs.String("store", "sqlite:orderflow.db", "store URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("show takes one execution id")
	}
	c, err := open(ctx, *url)
	if err != nil {
		return err
	}
	defer c.Close()
	return printExecution(ctx, c, fs.Arg(0), os.Stdout)
}

// parcelIDs names the n parcels of an order.
func parcelIDs(order string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-p%d", order, i+1)
	}
	return ids
}

// printExecution prints an execution's status, journal and children as
// JSON.
func printExecution(ctx context.Context, c *latch.Client, id string, w io.Writer) error {
	x, err := c.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	steps, err := c.Steps(ctx, tenant, id)
	if err != nil {
		return err
	}
	children, err := c.Children(ctx, tenant, id)
	if err != nil {
		return err
	}
	type step struct {
		Name    string          `json:"name"`
		Result  json.RawMessage `json:"result"`
		Attempt int             `json:"attempt"`
	}
	type child struct {
		ID     string       `json:"id"`
		Kind   string       `json:"kind"`
		Status latch.Status `json:"status"`
	}
	out := struct {
		ID         string          `json:"id"`
		Status     latch.Status    `json:"status"`
		Attempt    int             `json:"attempt"`
		WaitingFor string          `json:"waiting_for,omitempty"`
		WakeAt     *time.Time      `json:"wake_at,omitempty"`
		Result     json.RawMessage `json:"result,omitempty"`
		Steps      []step          `json:"steps"`
		Children   []child         `json:"children,omitempty"`
	}{ID: x.ID, Status: x.Status, Attempt: x.Attempt, WaitingFor: x.WaitingFor, WakeAt: x.WakeAt, Result: x.Result}
	for _, s := range steps {
		out.Steps = append(out.Steps, step{s.Name, s.Result, s.Attempt})
	}
	for _, k := range children {
		out.Children = append(out.Children, child{k.ID, k.Kind, k.Status})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
