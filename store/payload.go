package store

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CanonicalJSON returns the canonical form of a JSON document: object keys
// sorted, insignificant white space removed, numbers kept exactly as written.
// Dedup compares payloads in this form, so {"a":1,"b":2} and { "b": 2, "a": 1 }
// are the same payload. nil or empty input is {}.
func CanonicalJSON(raw []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}"), nil
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
