package remote_test

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/store/sqlite"
)

// exampleDir holds the stores of the examples' servers; TestMain removes it.
var exampleDir string

func TestMain(m *testing.M) {
	var err error
	if exampleDir, err = os.MkdirTemp("", "latch-remote-examples-"); err != nil {
		log.Fatal(err)
	}
	code := m.Run()
	os.RemoveAll(exampleDir)
	os.Exit(code)
}

// exampleServer starts a server for an example, on a SQLite file of its own,
// and answers its URL and admin key. It runs until the test binary ends.
func exampleServer() (url, admin string) {
	dir, err := os.MkdirTemp(exampleDir, "")
	if err != nil {
		log.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "latch.db"))
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Config{Store: st, AdminKeyHash: auth.HashKey(adminKey),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	return srv.URL, adminKey
}
