package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCheckSubmission: a submission of defaults passes; each refusal is an
// ErrInvalid FieldError naming the field, and only an oversized payload is
// TooLarge.
func TestCheckSubmission(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := CheckSubmission(&Submission{Kind: "k"}, now, 10); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for field, sub := range map[string]Submission{
		"kind":              {},
		"payload":           {Kind: "k", Payload: []byte(`"0123456789"`)},
		"queue":             {Kind: "k", Queue: "a b"},
		"priority":          {Kind: "k", Priority: MaxPriority + 1},
		"run_at":            {Kind: "k", RunAt: now.Add((MaxDelaySeconds + 1) * time.Second)},
		"max_attempts":      {Kind: "k", MaxAttempts: -1},
		"timeout_seconds":   {Kind: "k", TimeoutSeconds: MaxTimeoutSeconds + 1},
		"concurrency_limit": {Kind: "k", ConcurrencyLimit: 2},
		"dedup_key":         {Kind: "k", DedupKey: strings.Repeat("d", MaxKeyLen+1)},
		"rate_key":          {Kind: "k", RateKey: "a\u200bb"},
	} {
		err := CheckSubmission(&sub, now, 10)
		var fe *FieldError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: %v, want an ErrInvalid FieldError of %s", field, err, field)
			continue
		}
		if fe.TooLarge != (field == "payload") {
			t.Errorf("%s: TooLarge = %v", field, fe.TooLarge)
		}
	}
}

// TestPaging: Limit and After are checked, 0 is the default.
func TestPaging(t *testing.T) {
	id := "01a23c0f-a8b1-7cef-9a32-9d00c6ef0b16"
	if n, err := (&ListParams{After: id}).Paging(); err != nil || n != DefaultListLimit {
		t.Errorf("After an id: %d %v", n, err)
	}
	for _, p := range []ListParams{{Limit: -1}, {Limit: MaxListLimit + 1}, {After: strings.ToUpper(id)}, {After: id[1:]}} {
		if _, err := p.Paging(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", p, err)
		}
	}
}
