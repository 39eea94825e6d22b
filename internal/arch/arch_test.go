package arch_test

import (
	"testing"

	"github.com/latch-run/latch/internal/arch"
)

// TestLayering fails on any import the module's rules forbid, naming the
// chain of imports that makes it.
func TestLayering(t *testing.T) {
	g, err := arch.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range g.Check(arch.Rules(g.Module)) {
		t.Error(g.Format(v))
	}
}
