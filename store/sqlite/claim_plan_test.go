package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// TestClaimKindPlans: a claim filtered by kind reads the lanes of its
// kinds (executions_ready_kind, tenant and kind given), never a tenant's
// whole queue (executions_ready_tenant), in which 3,000 ready executions of
// a kind no worker handles cost every claim 3,000 rows read inside its
// write transaction. The plans are those of the database after ANALYZE
// with such a backlog, and before it (no statistics).
func TestClaimKindPlans(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, p := range []store.ClaimParams{
			{Kinds: []string{"echo", "sleep"}},
			{Kinds: []string{"echo"}, Queues: []string{"default"}},
			{Kinds: []string{"sleep", "echo", "sleep"}, Tenant: "acme"},
		} {
			turn, targs := turnQuery(&p, base, turnMark{}, 2)
			cands, cargs, _ := claimQuery(&p, base, "acme", 2)
			for name, q := range map[string]struct {
				sql  string
				args []any
			}{"turnQuery": {turn, targs}, "claimQuery": {cands, cargs}} {
				rows, err := s.read.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q.sql, q.args...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var plan []string
				for rows.Next() {
					var id, parent, unused int
					var detail string
					if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
						t.Fatal(err)
					}
					plan = append(plan, detail)
				}
				rows.Close()
				text := strings.Join(plan, "\n")
				lanes := strings.Count(text, "executions_ready_kind (tenant=? AND kind=?")
				if strings.Contains(text, "executions_ready_tenant") || lanes == 0 {
					t.Errorf("%s, %s, kinds %v: the plan does not read the kinds' lanes only:\n%s", when, name, p.Kinds, text)
				}
			}
		}
	}
	check("no statistics")
	var subs []store.Submission
	for range 3000 {
		subs = append(subs, store.Submission{Kind: "nobody", Priority: 9})
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: subs, Now: base}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.write.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	check("analyzed, 3,000 of kind nobody")
}
