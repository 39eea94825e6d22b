package api

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// checkBodyText refuses a JSON body whose text is not valid UTF-8: a byte
// sequence that is not UTF-8, or a \u escape of a lone UTF-16 surrogate.
// encoding/json turns both into U+FFFD without a word, so a client would
// find its key or payload silently changed; the contract answers 400 instead. It
// runs on the raw bytes, before anything is decoded. The detail names the
// field holding the first bad text (prefix, "items[3].", put before it).
func checkBodyText(data []byte, prefix string) error {
	off := badTextOffset(data)
	if off < 0 {
		return nil
	}
	return invalid(prefix+fieldAt(data, off), "text is not valid UTF-8 (byte %d of the body); it is refused, never replaced", off)
}

// badTextOffset returns the offset of the first byte of data that is not
// UTF-8 text — an invalid sequence, or the backslash of a \u escape of a
// lone surrogate inside a string — or -1.
func badTextOffset(data []byte) int {
	if utf8.Valid(data) && !bytes.Contains(data, []byte(`\u`)) {
		return -1 // the common case, at memory speed
	}
	inString := false
	for i := 0; i < len(data); {
		c := data[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return i // also catches UTF-8-encoded surrogates
			}
			i += size
			continue
		}
		switch {
		case c == '"':
			inString = !inString
			i++
		case c == '\\' && inString && i+1 < len(data) && data[i+1] == 'u':
			r, ok := hex4(data[i+2:])
			switch {
			case !ok: // malformed: the JSON syntax check names it
				i += 2
			case utf16.IsSurrogate(r) && r >= 0xdc00:
				return i // a low surrogate with no high one before it
			case utf16.IsSurrogate(r):
				if lo, ok := hex4(data[min(i+8, len(data)):]); !ok || data[i+6] != '\\' || data[i+7] != 'u' ||
					lo < 0xdc00 || lo > 0xdfff {
					return i // a high surrogate with no low one after it
				}
				i += 12
			default:
				i += 6
			}
		case c == '\\' && inString:
			i += 2 // one escaped character: \" does not end the string
		default:
			i++
		}
	}
	return -1
}

// hex4 reads the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}

// fieldAt names the value of the JSON document data that holds byte off:
// "kind", "payload.a[1]"; a bad object key names the object; "body" when
// off is at the top level or the document cannot be walked.
func fieldAt(data []byte, off int) string {
	type frame struct {
		path   string
		object bool
		key    bool // an object expecting a key next
		index  int  // an array's next element
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []frame
	// valuePath is the path of the value the next token starts.
	valuePath := func(key string) string {
		if len(stack) == 0 {
			return ""
		}
		top := &stack[len(stack)-1]
		if top.object {
			if top.path == "" {
				return key
			}
			return top.path + "." + key
		}
		p := top.path + "[" + strconv.Itoa(top.index) + "]"
		top.index++
		return p
	}
	orBody := func(p string) string {
		if p == "" {
			return "body"
		}
		return p
	}
	var key string
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return "body"
		}
		end := int(dec.InputOffset())
		if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			key = tok.(string)
			stack[len(stack)-1].key = false
			if off < end {
				return orBody(stack[len(stack)-1].path)
			}
			continue
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true // after this value, a key
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, frame{path: valuePath(key), object: tok == json.Delim('{'), key: tok == json.Delim('{')})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		p := valuePath(key)
		if off < end {
			return orBody(p)
		}
	}
}
