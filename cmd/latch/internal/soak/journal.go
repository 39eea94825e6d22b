package soak

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// journal is the soak's record of what it was told and what it saw: one
// line per acknowledged execution and one per handler start, appended to a
// temporary file and read back by the checks. On disk rather than in
// memory, so that a long soak's bookkeeping does not grow the heap the
// memory check watches.
type journal struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	err error // the first write error
}

// ackRec: the store acknowledged a new execution of class c for key ("" if
// none).
type ackRec struct {
	id    string
	class class
	key   string
}

// startRec: a handler started attempt of execution id at at.
type startRec struct {
	at      time.Time
	id      string
	attempt int
	class   class
	sched   string
}

func openJournal(dir string) (*journal, error) {
	f, err := os.CreateTemp(dir, "latch-soak-*.journal")
	if err != nil {
		return nil, fmt.Errorf("soak: journal: %w", err)
	}
	return &journal{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (j *journal) line(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := fmt.Fprintf(j.w, format, args...); err != nil && j.err == nil {
		j.err = err
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func undash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func (j *journal) ack(id string, c class, key string) {
	j.line("A %s %s %s\n", id, c, dash(key))
}

func (j *journal) start(at time.Time, id string, attempt int, c class, sched string) {
	j.line("S %d %s %d %s %s\n", at.UnixNano(), id, attempt, dash(string(c)), dash(sched))
}

// read flushes the journal and reads every record back.
func (j *journal) read() (acks []ackRec, starts []startRec, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.w.Flush(); err != nil && j.err == nil {
		j.err = err
	}
	if j.err != nil {
		return nil, nil, fmt.Errorf("soak: journal: %w", j.err)
	}
	if _, err := j.f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, fmt.Errorf("soak: journal: %w", err)
	}
	sc := bufio.NewScanner(j.f)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "A":
			acks = append(acks, ackRec{id: f[1], class: class(f[2]), key: undash(f[3])})
		case len(f) == 6 && f[0] == "S":
			ns, err1 := strconv.ParseInt(f[1], 10, 64)
			attempt, err2 := strconv.Atoi(f[3])
			if err1 != nil || err2 != nil {
				return nil, nil, fmt.Errorf("soak: journal line %d: %q", n, sc.Text())
			}
			starts = append(starts, startRec{at: time.Unix(0, ns), id: f[2], attempt: attempt,
				class: class(undash(f[4])), sched: undash(f[5])})
		default:
			return nil, nil, fmt.Errorf("soak: journal line %d: %q", n, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("soak: journal: %w", err)
	}
	return acks, starts, nil
}

// remove closes and deletes the journal's file.
func (j *journal) remove() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.f.Close()
	os.Remove(j.f.Name())
}
