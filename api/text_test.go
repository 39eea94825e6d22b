package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestBodyTextMustBeUTF8: a body whose text is not valid UTF-8 — raw bytes,
// or a \u escape of a lone surrogate, both of which a JSON decoder turns
// into U+FFFD without a word — is refused with a 400 naming the field, on
// every endpoint that takes a JSON body. Nothing is stored.
func TestBodyTextMustBeUTF8(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	for _, c := range []struct {
		method, path, key string
		body              string // %s is the bad text
		field             string
	}{
		{"POST", "/api/executions", key, `{"kind":"%s"}`, "kind"},
		{"POST", "/api/executions", key, `{"kind":"echo","dedup_key":"%s"}`, "dedup_key"},
		{"POST", "/api/executions", key, `{"kind":"echo","payload":{"a":[1,"%s"]}}`, "payload.a[1]"},
		{"POST", "/api/executions", key, `{"kind":"echo","payload":{"%s":1}}`, "payload"},
		{"POST", "/api/executions/batch", key, `{"items":[{"kind":"echo"},{"kind":"%s"}]}`, "items[1].kind"},
		{"POST", "/api/workers/claim", key, `{"worker_id":"%s"}`, "worker_id"},
		{"POST", "/api/executions/00000000-0000-0000-0000-000000000000/heartbeat", key, `{"lease_token":"%s"}`, "lease_token"},
		{"POST", "/api/executions/00000000-0000-0000-0000-000000000000/complete", key, `{"lease_token":"t","result":"%s"}`, "result"},
		{"POST", "/api/executions/00000000-0000-0000-0000-000000000000/fail", key, `{"lease_token":"t","error":"%s"}`, "error"},
		{"PUT", "/api/schedules/s", key, `{"every":"1h","kind":"echo","payload":{"note":"%s"}}`, "payload.note"},
		{"PUT", "/api/rate-limits/r", key, `{"rate":1,"per_seconds":1,"key":"%s"}`, "key"},
		{"POST", "/api/tenants", e.admin, `{"name":"%s"}`, "name"},
		{"PATCH", "/api/tenants/acme", e.admin, `{"max_inflight":1,"name":"%s"}`, "name"},
	} {
		for _, bad := range []string{"a\xffb", "\xed\xa0\x80", `a\udc00b`, `\ud800`, `\ud800\u0041`} {
			body := strings.Replace(c.body, "%s", bad, 1)
			p := e.do(c.method, c.path, c.key, body).problem(http.StatusBadRequest, CodeInvalidRequest)
			if !strings.HasPrefix(p.Detail, c.field+": ") || !strings.Contains(p.Detail, "UTF-8") {
				t.Errorf("%s %s %q: detail %q, want it to name %s and UTF-8", c.method, c.path, body, p.Detail, c.field)
			}
		}
	}
	if n := e.count(); n != 0 {
		t.Fatalf("%d executions stored from refused bodies", n)
	}
	// A valid surrogate pair and escaped look-alikes in a payload are text.
	x := e.submit(key, `{"kind":"echo","payload":{"s":"\ud83d\ude00 \u202e \\udc00"}}`, http.StatusCreated)
	if got := string(x.Payload); got != `{"s":"😀 `+"\u202e"+` \\udc00"}` {
		t.Fatalf("payload %s", got)
	}
}

// TestInvisibleCharactersRefused: identifiers shown in the console and in
// logs refuse control characters, bidi overrides and isolates and
// zero-width characters, which would let one value pass for another;
// payloads stay free.
func TestInvisibleCharactersRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	e.putSchedule(key, "s", `{"every":"1h","kind":"echo"}`, http.StatusCreated)
	bad := []string{"\u202e", "\u202a", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c",
		"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u0007", "\u0085", "\U000e0041", "\u2028"}
	for _, c := range bad {
		v := "pay" + c + "ment"
		js := strings.Trim(mustJSONString(t, v), `"`)
		for _, body := range []string{
			`{"kind":"` + js + `"}`,
			`{"kind":"echo","dedup_key":"` + js + `"}`,
			`{"kind":"echo","concurrency_key":"` + js + `"}`,
			`{"kind":"echo","rate_key":"` + js + `"}`,
		} {
			e.do("POST", "/api/executions", key, body).problem(http.StatusBadRequest, CodeInvalidRequest)
		}
		if c != "\u0007" { // net/http will not send a header with an ASCII control
			e.do("POST", "/api/executions", key, `{"kind":"echo"}`, "Idempotency-Key", v).
				problem(http.StatusBadRequest, CodeInvalidRequest)
			e.do("POST", "/api/schedules/s/trigger", key, nil, "Idempotency-Key", v).
				problem(http.StatusBadRequest, CodeInvalidRequest)
		}
		e.do("PUT", "/api/schedules/s", key, `{"every":"1h","kind":"`+js+`"}`).
			problem(http.StatusBadRequest, CodeInvalidRequest)
		e.do("PUT", "/api/rate-limits/"+url.PathEscape(v), key, `{"rate":1,"per_seconds":1}`).
			problem(http.StatusBadRequest, CodeInvalidRequest)
	}
	if n := e.count(); n != 0 {
		t.Fatalf("%d executions stored from refused requests", n)
	}
	// The same characters in a payload are data.
	e.submit(key, `{"kind":"echo","payload":{"s":"pay\u202ement\u200b"}}`, http.StatusCreated)
	// And ordinary non-ASCII text is an identifier like any other.
	e.submit(key, `{"kind":"échange","dedup_key":"commande-été-😀"}`, http.StatusCreated)
}

func mustJSONString(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			if r > 0xffff {
				r -= 0x10000
				b.WriteString(escapeU(0xd800 + (r >> 10)))
				b.WriteString(escapeU(0xdc00 + (r & 0x3ff)))
				continue
			}
			b.WriteString(escapeU(r))
			continue
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

func escapeU(r rune) string {
	const hex = "0123456789abcdef"
	return `\u` + string([]byte{hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf]})
}

// TestBadTextOffset: the raw-bytes scan finds exactly the text a JSON
// decoder would replace with U+FFFD, and names where it sits.
func TestBadTextOffset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body  string
		off   int
		field string
	}{
		{`{"a":"ok é 😀"}`, -1, ""},
		{`{"a":"\ud83d\ude00"}`, -1, ""},
		{`{"a":"\\udc00"}`, -1, ""},      // an escaped backslash, then text
		{`{"a":"\"\udc00"}`, 8, "a"},     // an escaped quote does not end the string
		{`{"a":"x\ud800"}`, 7, "a"},      // a high surrogate at the end of the string
		{`{"a":"\ud800\ud800"}`, 6, "a"}, // two highs
		{`{"a":"\udc00\ud800"}`, 6, "a"}, // a low first
		{`{"a":"\ud8"}`, -1, ""},         // malformed: left to the syntax check
		{"{\"a\":[{\"b\":\"\xc3\"}]}", 12, "a[0].b"},
		{"{\"a\":{\"\xff\":1}}", 7, "a"},
		{"{\"\xff\":1}", 2, "body"},
	} {
		off := badTextOffset([]byte(c.body))
		if off != c.off {
			t.Errorf("%q: offset %d, want %d", c.body, off, c.off)
			continue
		}
		if off >= 0 {
			if f := fieldAt([]byte(c.body), off); f != c.field {
				t.Errorf("%q: field %q, want %q", c.body, f, c.field)
			}
		}
	}
}
