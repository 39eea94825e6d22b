package main

import (
	"context"
	"fmt"
	"io"

	"github.com/latch-run/latch/internal/buildinfo"
)

// runVersion is `latch version` (and `latch --version`): the module
// version and the VCS revision this binary was built from.
func runVersion(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("version")
	if err := parse(ctx, fs, args, 0, 0); err != nil {
		return err
	}
	_, err := fmt.Fprintln(out, "latch "+buildinfo.Current().Describe())
	return err
}
