package store

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxJSONDepth bounds how deeply a JSON document a tenant stores (a
// payload, a result, a step's result, a signal's data) nests arrays and
// objects: the top-level value is level 1. Documents nest a few levels in
// practice; anything that reads a stored document (encoders, the console's
// pretty-printer, a client's parser) spends stack or output per level, so
// a small document nested thousands deep would cost every reader far more
// than its size.
const MaxJSONDepth = 64

// JSONTooDeep reports whether raw nests arrays and objects deeper than
// max. It scans the bytes once, skipping strings, and builds nothing, so a
// document nested ten thousand deep is refused at the cost of reading it.
// It does not check syntax.
func JSONTooDeep(raw []byte, max int) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > max {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// CheckJSONDepth: raw nests at most MaxJSONDepth levels of arrays and
// objects (a FieldError of field otherwise).
func CheckJSONDepth(field string, raw []byte) error {
	if JSONTooDeep(raw, MaxJSONDepth) {
		return fieldError(field, "nests arrays and objects more than %d levels deep", MaxJSONDepth)
	}
	return nil
}

// CanonicalJSON returns the canonical form of a JSON document: object keys
// sorted, insignificant white space removed, numbers kept exactly as written.
// Dedup compares payloads in this form, so {"a":1,"b":2} and { "b": 2, "a": 1 }
// are the same payload. nil or empty input is {}. Every JSON document
// stored for a tenant passes here, so here too the depth rule is held
// (CheckJSONDepth, refused before anything is built): the error is then a
// FieldError of field "json", which callers rename to their field.
func CanonicalJSON(raw []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}"), nil
	}
	if err := CheckJSONDepth("json", raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: payload is not valid JSON: %w", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: payload has data after the JSON value", ErrInvalid)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: payload: %w", ErrInvalid, err)
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}
