package soak

import (
	"context"
	"log/slog"
	"strings"
)

// errorLogs is the engine's log handler: it passes records on to the
// configured logger and turns each record at level error (a failed claim,
// a write the store refused, a failed scheduler or rescuer pass, a
// panicking handler) into a breach of check "errors": under a steady load
// on a healthy store there should be none.
type errorLogs struct {
	next  slog.Handler // nil: discard
	found *findings
	attrs []slog.Attr
}

func newErrorLogs(l *slog.Logger, found *findings) *slog.Logger {
	h := &errorLogs{found: found}
	if l != nil {
		h.next = l.Handler()
	}
	return slog.New(h)
}

func (h *errorLogs) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelError || (h.next != nil && h.next.Enabled(ctx, level))
}

func (h *errorLogs) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelError {
		var b strings.Builder
		b.WriteString(rec.Message)
		add := func(a slog.Attr) bool {
			b.WriteString(" " + a.String())
			return true
		}
		for _, a := range h.attrs {
			add(a)
		}
		rec.Attrs(add)
		h.found.add("errors", "engine logged an error: %s", b.String())
	}
	if h.next != nil && h.next.Enabled(ctx, rec.Level) {
		return h.next.Handle(ctx, rec)
	}
	return nil
}

func (h *errorLogs) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), attrs...)
	if h.next != nil {
		c.next = h.next.WithAttrs(attrs)
	}
	return &c
}

func (h *errorLogs) WithGroup(name string) slog.Handler {
	c := *h
	if h.next != nil {
		c.next = h.next.WithGroup(name)
	}
	return &c
}
