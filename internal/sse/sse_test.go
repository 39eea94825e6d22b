package sse

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestStreamWritesEventsCommentsAndIDs(t *testing.T) {
	rec := httptest.NewRecorder()
	s := Start(rec, httptest.NewRequest("GET", "/x", nil), time.Second)
	ok := s.Checkpoint("hello") && s.Event("status", []byte(`{"a":1}`+"\n")) && s.Comment("keep-alive") &&
		s.Event("change", nil)
	if !ok {
		t.Fatal("a write to a recorder failed")
	}
	want := ": hello\nid: 0\n\n" +
		"event: status\nid: 1\ndata: {\"a\":1}\n\n" +
		": keep-alive\n\n" +
		"event: change\nid: 2\ndata: \n\n"
	if got := rec.Body.String(); got != want {
		t.Fatalf("stream:\n%q\nwant\n%q", got, want)
	}
	h := rec.Result().Header
	if rec.Code != http.StatusOK || h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("answer %d %v", rec.Code, h)
	}
}

func TestHeadGetsHeadersOnly(t *testing.T) {
	rec := httptest.NewRecorder()
	if s := Start(rec, httptest.NewRequest("HEAD", "/x", nil), time.Second); s != nil {
		t.Fatal("a HEAD request got a stream to write")
	}
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/event-stream" || rec.Body.Len() != 0 {
		t.Fatalf("HEAD: %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
}
