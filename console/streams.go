package console

import "sync"

// liveStreams are the live streams (/live) open on this console, by
// session: a session holds at most max of them at once
// (Config.MaxStreamsPerSession), and its logout ends them.
type liveStreams struct {
	max int // <= 0: no bound
	mu  sync.Mutex
	by  map[string]map[chan struct{}]bool // session id hash → the end of each of its streams
}

func newLiveStreams(max int) *liveStreams {
	return &liveStreams{max: max, by: map[string]map[chan struct{}]bool{}}
}

// open registers a stream of session; ok false when the session holds as
// many as it may. end is closed when the session logs out; release
// unregisters the stream (call it once, when the stream ends).
func (s *liveStreams) open(session string) (end <-chan struct{}, release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mine := s.by[session]
	if s.max > 0 && len(mine) >= s.max {
		return nil, nil, false
	}
	if mine == nil {
		mine = map[chan struct{}]bool{}
		s.by[session] = mine
	}
	ch := make(chan struct{})
	mine[ch] = true
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if m := s.by[session]; m[ch] {
			delete(m, ch)
			if len(m) == 0 {
				delete(s.by, session)
			}
		}
	}, true
}

// end ends every stream of session.
func (s *liveStreams) end(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.by[session] {
		close(ch)
	}
	delete(s.by, session)
}
