package redis_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/latch-run/latch/store"
)

// TestJournalOfAnOlderLatch: a journal recorded before the journal kept its
// order and size (no steporder:<id>, no jbytes) is paged in record order,
// carried by a lease up to store.ClaimJournalBytes, and counted whole
// against the bound of bytes: the first call that needs them builds both.
func TestJournalOfAnOlderLatch(t *testing.T) {
	o := newOldLatch(t)
	ctx, base, s, rdb, ns := o.ctx, o.base, o.s, o.rdb, o.ns
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "flow"}}, Now: base}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, &store.ClaimParams{Tenant: "acme", WorkerID: "w", Max: 1, Now: base})
	if err != nil || len(res.Leases) != 1 {
		t.Fatalf("Claim: %v, %v", res, err)
	}
	l := res.Leases[0]
	big := `"` + strings.Repeat("x", 40) + `"` // a step "sN" of 44 bytes
	for i := range 5 {
		if _, err := s.RecordStep(ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: "acme",
			Token: l.Token, Name: fmt.Sprintf("s%d", i), Result: raw(big), Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	// What an older latch left: the entries, without their order and size.
	if err := rdb.Del(ctx, ns+":steporder:"+l.ExecutionID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, ns+":exec:"+l.ExecutionID, "jbytes").Err(); err != nil {
		t.Fatal(err)
	}

	page, err := s.Steps(ctx, &store.StepsParams{Tenant: "acme", ID: l.ExecutionID, Limit: 2})
	if err != nil || len(page.Items) != 2 || page.Items[0].Name != "s0" || page.Items[1].Name != "s1" || page.Next == 0 {
		t.Fatalf("first page of an older journal: %+v, %v; want s0, s1 and a next", page, err)
	}
	page, err = s.Steps(ctx, &store.StepsParams{Tenant: "acme", ID: l.ExecutionID, After: page.Next})
	if err != nil || len(page.Items) != 3 || page.Items[0].Name != "s2" || page.Next != 0 {
		t.Fatalf("the rest of an older journal: %+v, %v; want s2..s4", page, err)
	}
	// 5 steps of 44 bytes are 220: one more of 44 passes 250, one of 30 fits.
	_, err = s.RecordStep(ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: "acme", Token: l.Token,
		Name: "s5", Result: raw(big), MaxJournalBytes: 250, Now: base})
	if !errors.Is(err, store.ErrJournalTooLarge) {
		t.Fatalf("a step past the bound of an older journal: %v, want ErrJournalTooLarge", err)
	}
	if _, err := s.RecordStep(ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: "acme",
		Token: l.Token, Name: "s5", Result: raw(`"` + strings.Repeat("y", 26) + `"`), MaxJournalBytes: 250,
		Now: base}); err != nil {
		t.Fatalf("a step that fits: %v", err)
	}
	page, err = s.Steps(ctx, &store.StepsParams{Tenant: "acme", ID: l.ExecutionID})
	if err != nil || len(page.Items) != 6 || page.Items[5].Name != "s5" {
		t.Fatalf("the journal after a new step: %+v, %v; want s0..s5", page, err)
	}
}

func raw(s string) []byte { return []byte(s) }
