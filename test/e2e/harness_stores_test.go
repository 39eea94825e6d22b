package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
)

// proc is a store server process the test owns. It dies with the test
// binary (Pdeathsig) and is killed in t.Cleanup.
type proc struct {
	name string
	cmd  *exec.Cmd
	logs *lockedWriter
	done chan struct{}
}

func startProc(t *testing.T, name string, cred *syscall.Credential, logs *lockedWriter, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitExit waits up to d for the process to end, then kills it.
func (p *proc) waitExit(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		return false
	}
}

// storeLogs keeps a private store's output and shows it if t fails.
func storeLogs(t *testing.T, name string) *lockedWriter {
	l := &lockedWriter{w: new(bytes.Buffer)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs of the private %s:\n%s", name, l.String())
		}
	})
	return l
}

func freePort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// privatePostgres is a PostgreSQL cluster of the test's own, with fsync on.
type privatePostgres struct {
	t    *testing.T
	bin  string // the directory of initdb and postgres
	data string
	sock string
	port int
	cred *syscall.Credential // the postgres OS user's, when the test runs as root
	logs *lockedWriter
	url  string
	mu   sync.Mutex
	p    *proc
}

// postgresBin finds the directory holding initdb and postgres.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { // newest major version first
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("no initdb and postgres in /usr/lib/postgresql/*/bin or on PATH")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	bin, err := postgresBin()
	if err != nil {
		missingBackend(t, "%v", err)
	}
	pg := &privatePostgres{t: t, bin: bin, port: freePort(t), logs: storeLogs(t, "PostgreSQL")}
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as the postgres user,
		// in a directory of its own that it can reach.
		u, err := user.Lookup("postgres")
		if err != nil {
			missingBackend(t, "running as root and there is no postgres OS user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		dir = filepath.Join(dir, "pg")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	pg.data, pg.sock = filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", pg.data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: pg.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	if err := os.Mkdir(pg.sock, 0o700); err != nil {
		t.Fatal(err)
	}
	if pg.cred != nil {
		if err := os.Chown(pg.sock, int(pg.cred.Uid), int(pg.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	pg.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.port)
	t.Cleanup(func() {
		if p := pg.current(); p != nil && !p.exited() {
			_ = p.cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown
			p.waitExit(10 * time.Second)
		}
	})
	pg.start()
	return pg
}

func (pg *privatePostgres) current() *proc {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.p
}

// start starts the postmaster and waits until it accepts connections.
func (pg *privatePostgres) start() {
	t := pg.t
	t.Helper()
	p := startProc(t, "postgres", pg.cred, pg.logs, filepath.Join(pg.bin, "postgres"),
		"-D", pg.data, "-p", strconv.Itoa(pg.port), "-k", pg.sock,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "synchronous_commit=on",
		"-c", "max_connections=100")
	pg.mu.Lock()
	pg.p = p
	pg.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, pg.url)
		if err == nil {
			conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		if p.exited() {
			t.Fatalf("PostgreSQL exited during start-up: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL does not accept connections after 20s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends sig to the postmaster, as pg_ctl stop does (SIGINT: -m fast,
// sessions aborted and a shutdown checkpoint; SIGQUIT: -m immediate, no
// checkpoint and crash recovery at the next start), and waits for it to
// exit.
func (pg *privatePostgres) stop(sig syscall.Signal) {
	p := pg.current()
	_ = p.cmd.Process.Signal(sig)
	if !p.waitExit(15 * time.Second) {
		pg.t.Errorf("PostgreSQL did not stop within 15s of %v; killed", sig)
	}
}

// privateRedis is a redis-server of the test's own, with every write in
// the AOF fsynced before it is answered.
type privateRedis struct {
	t    *testing.T
	bin  string
	dir  string
	port int
	logs *lockedWriter
	url  string
	mu   sync.Mutex
	p    *proc
}

func startPrivateRedis(t *testing.T) *privateRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		missingBackend(t, "no redis-server on PATH")
	}
	r := &privateRedis{t: t, bin: bin, dir: t.TempDir(), port: freePort(t), logs: storeLogs(t, "Redis")}
	r.url = fmt.Sprintf("redis://127.0.0.1:%d/0", r.port)
	t.Cleanup(func() {
		if p := r.current(); p != nil && !p.exited() {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	})
	r.start()
	return r
}

func (r *privateRedis) current() *proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p
}

// start starts redis-server on the same directory (so it reloads its AOF)
// and waits until it answers PING.
func (r *privateRedis) start() {
	t := r.t
	t.Helper()
	p := startProc(t, "redis-server", nil, r.logs, r.bin,
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--daemonize", "no")
	r.mu.Lock()
	r.p = p
	r.mu.Unlock()
	rdb := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port), MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if p.exited() {
			t.Fatalf("redis-server exited during start-up: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server does not answer PING after 20s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SHUTDOWN (the AOF is flushed) and waits for the process to end.
func (r *privateRedis) stop() {
	rdb := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port), MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = rdb.Shutdown(ctx).Err() // the connection closes: no answer
	cancel()
	rdb.Close()
	if !r.current().waitExit(15 * time.Second) {
		r.t.Errorf("redis-server did not exit within 15s of SHUTDOWN; killed")
	}
}

// kill ends redis-server with SIGKILL: a crash.
func (r *privateRedis) kill() {
	p := r.current()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}
