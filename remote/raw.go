package remote

import (
	"bytes"
	"encoding/json"
)

// rawJSON keeps an answer's JSON as the server sent it, fields this version
// of the package does not know included. Answer types embed it.
type rawJSON struct{ raw json.RawMessage }

// JSON is the answer as the server sent it: for showing it whole, or for
// the fields of a newer server than this package knows. It is nil for a
// value the client did not decode from an answer itself.
func (r *rawJSON) JSON() json.RawMessage { return r.raw }

func (r *rawJSON) keep(b []byte) { r.raw = bytes.Clone(b) }

// keeper is an answer that keeps its JSON.
type keeper interface{ keep([]byte) }
