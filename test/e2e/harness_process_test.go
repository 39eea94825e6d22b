package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/fault"
)

// fpLife is one life of the supervised process.
type fpLife struct {
	point  string // the point LATCH_FAULTS arms; "" for a life without faults
	faults string // LATCH_FAULTS

	logs   *lockedWriter
	times  [3]time.Time // started, ready, ended
	ended  bool
	killed bool   // it ended by SIGKILL
	fired  string // the point its crash line names
	err    error  // how it ended
}

var fpCrashLine = regexp.MustCompile(`latch: fault point (\S+) fired at hit \d+`)

// errFPQuit is start's answer when the supervisor is told to quit.
var errFPQuit = errors.New("supervisor stopped")

// fpSupervisor keeps one `latch serve` (faultsBinary) running on a store,
// restarting it whenever it dies: the lives of the plan first, in order,
// then lives without faults.
type fpSupervisor struct {
	t     *testing.T
	store string
	plan  []*fpLife

	mu    sync.Mutex
	base  string    // the URL of the last life that became ready
	life  int       // its index in lives
	lives []*fpLife // every life started

	up    chan struct{} // closed when the first life is ready
	clean chan struct{} // closed when a life after the plan is ready
	quit  chan struct{}
	done  chan struct{}
}

func startFPSupervisor(t *testing.T, store string, plan []*fpLife) *fpSupervisor {
	s := &fpSupervisor{t: t, store: store, plan: plan, up: make(chan struct{}), clean: make(chan struct{}),
		quit: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	t.Cleanup(func() {
		close(s.quit)
		<-s.done
		if t.Failed() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for i, l := range s.lives {
				logs := l.logs.String()
				if len(logs) > 6000 {
					logs = "...\n" + logs[len(logs)-6000:]
				}
				t.Logf("life %d (LATCH_FAULTS=%q, ended %v: %v), the end of its logs:\n%s", i, l.faults, l.ended, l.err, logs)
			}
		}
	})
	return s
}

func (s *fpSupervisor) url() string {
	u, _ := s.current()
	return u
}

// current returns the URL of the last life that became ready, and its
// index. Each life listens on an address of its own, so a request sent to
// the URL reaches that life or nothing.
func (s *fpSupervisor) current() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base, s.life
}

// waitUp waits until the first life is ready.
func (s *fpSupervisor) waitUp(ctx context.Context) error {
	select {
	case <-s.up:
		return nil
	case <-s.done:
		return errors.New("the supervisor gave up")
	case <-ctx.Done():
		return fmt.Errorf("latch serve not up: %w", ctx.Err())
	}
}

func (s *fpSupervisor) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for i, l := range s.lives {
		fmt.Fprintf(&b, "\n  life %d LATCH_FAULTS=%q ended=%v fired=%q", i, l.faults, l.ended, l.fired)
		if l.ended {
			fmt.Fprintf(&b, " start-up %v, then up %v", l.times[1].Sub(l.times[0]).Round(time.Millisecond),
				l.times[2].Sub(l.times[1]).Round(time.Millisecond))
		}
	}
	return b.String()
}

func (s *fpSupervisor) run() {
	defer close(s.done)
	upOnce, cleanOnce := sync.Once{}, sync.Once{}
	for i := 0; ; i++ {
		life := &fpLife{}
		if i < len(s.plan) {
			life = s.plan[i]
		} else if i > len(s.plan)+2 {
			s.t.Errorf("latch serve died %d times without faults: giving up", i-len(s.plan))
			return
		}
		life.logs = &lockedWriter{w: &bytes.Buffer{}}
		started := time.Now()
		addr, cmd, exited, ready, err := s.start(life)
		s.mu.Lock()
		life.times[0], life.times[1] = started, time.Now()
		s.lives = append(s.lives, life)
		if ready {
			s.base, s.life = "http://"+addr, i
		}
		s.mu.Unlock()
		if errors.Is(err, errFPQuit) {
			return
		}
		if err != nil {
			s.t.Errorf("supervisor: %v", err)
			return
		}
		if ready {
			upOnce.Do(func() { close(s.up) })
			if life.faults == "" {
				cleanOnce.Do(func() { close(s.clean) })
			}
		}
		// Not ready: it died during start-up (its worker may claim work
		// and reach a point before /readyz answers).
		select {
		case <-exited:
		case <-s.quit:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			return
		}
		s.ended(life, cmd)
		if life.point == "" {
			s.t.Errorf("latch serve without faults died: %v", life.err)
		} else if !life.killed || life.fired != life.point {
			s.t.Errorf("life %d with LATCH_FAULTS=%q ended (%v) not by SIGKILL at its point (the crash line names %q)",
				i, life.faults, life.err, life.fired)
		}
	}
}

// ended records how life's process ended.
func (s *fpSupervisor) ended(life *fpLife, cmd *exec.Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	life.ended = true
	life.times[2] = time.Now()
	life.err = fmt.Errorf("%v", cmd.ProcessState)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		life.killed = ws.Signaled() && ws.Signal() == syscall.SIGKILL
	}
	if m := fpCrashLine.FindAllStringSubmatch(life.logs.String(), -1); len(m) == 1 {
		life.fired = m[0][1]
	} else if len(m) > 1 {
		life.fired = fmt.Sprintf("%d crash lines", len(m))
	}
}

// start starts a life on a free address and waits until it is ready, or
// has died. exited is closed when the process ends.
func (s *fpSupervisor) start(life *fpLife) (addr string, cmd *exec.Cmd, exited chan struct{}, ready bool, err error) {
	for try := 0; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, nil, false, err
		}
		addr = l.Addr().String()
		l.Close()
		cmd = exec.Command(faultsBinary, "serve", "--addr", addr, "--store", s.store, "--workers", "8",
			"--lease-seconds", "2", "--rescue-interval", "300ms", "--shutdown-grace", "2s")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, fault.Env+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		// LATCH_HTTP_ALLOW: the witness the http kind calls is on 127.0.0.1.
		cmd.Env = append(cmd.Env, "LATCH_ADMIN_KEY="+adminKey, "LATCH_HTTP_ALLOW=127.0.0.1", fault.Env+"="+life.faults)
		cmd.Stdout, cmd.Stderr = life.logs, life.logs
		if err := cmd.Start(); err != nil {
			return "", nil, nil, false, err
		}
		exited = make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		hc := &http.Client{Timeout: time.Second}
		for deadline := time.Now().Add(30 * time.Second); ; {
			if resp, err := hc.Get("http://" + addr + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return addr, cmd, exited, true, nil
				}
			}
			select {
			case <-exited:
			case <-s.quit:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				return "", nil, nil, false, errFPQuit
			case <-time.After(25 * time.Millisecond):
				if time.Now().Before(deadline) {
					continue
				}
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				return "", nil, nil, false, fmt.Errorf("latch serve not ready after 30s:\n%s", life.logs.String())
			}
			// It exited during start-up: another process may have taken
			// the port meanwhile; else it is a death like any other.
			if try < 3 && strings.Contains(life.logs.String(), "address already in use") {
				life.logs = &lockedWriter{w: &bytes.Buffer{}}
				break
			}
			return addr, cmd, exited, false, nil
		}
	}
}
