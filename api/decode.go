package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/latch-run/latch/store"
)

// maxBodyDepth bounds the nesting of a request body, checked before the
// body is decoded so that a body nested thousands deep costs one scan: a
// stored document (store.MaxJSONDepth) and the few levels a body holds it
// in (a batch's {"items": [{"payload": ...}]}), with room to spare, so
// that a document only a little too deep is refused by its own bound,
// which names its field, where it is made canonical.
const maxBodyDepth = 2 * store.MaxJSONDepth

// readBody checks the Content-Type of a request that must carry a JSON body
// and reads the body, at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if err := checkContentType(r.Header.Get("Content-Type"), r.Method == http.MethodPatch); err != nil {
		return nil, err
	}
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, invalid("body", "reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, invalid("body", "a JSON object is required")
	}
	return body, nil
}

// checkContentType accepts application/json with no charset or UTF-8, and
// for a PATCH also application/merge-patch+json (RFC 7396), which is what
// a PATCH body of settable fields is.
func checkContentType(ct string, patch bool) error {
	if ct == "" {
		return problem(CodeUnsupportedMediaType, "Content-Type must be application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !(mt == "application/json" || patch && mt == "application/merge-patch+json") {
		return problem(CodeUnsupportedMediaType, "Content-Type must be application/json, not %q", ct)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return problem(CodeUnsupportedMediaType, "the request body must be UTF-8, not charset %q", cs)
	}
	return nil
}

// decodeJSON decodes data, which must be exactly one JSON object, into the
// struct v. It is strict: text that is not valid UTF-8 (checkBodyText), a
// key that is not one of v's JSON field names exactly (case included), a
// key given twice, a value of the wrong type, malformed JSON or data after
// the object is a 400 invalid_request whose detail names the field. prefix
// ("items[3].") is put before field names. A body nesting deeper than any
// stored document may (maxBodyDepth) is refused before it is decoded.
func decodeJSON(data []byte, v any, prefix string) error {
	if err := checkBodyText(data, prefix); err != nil {
		return err
	}
	if store.JSONTooDeep(data, maxBodyDepth) {
		return invalid(strings.TrimSuffix(prefix, ".")+"body",
			"nests arrays and objects more than %d levels deep (a payload, result or data may nest %d)",
			maxBodyDepth, store.MaxJSONDepth)
	}
	if err := scanKeys(data, fieldNames(reflect.TypeOf(v)), prefix); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return invalid(prefix+jsonPath(reflect.TypeOf(v), te.Field), "expected %s, got %s",
				jsonTypeName(te.Type), jsonValueName(te.Value))
		}
		// scanKeys has checked syntax and keys, so this is unexpected.
		return invalid(strings.TrimSuffix(prefix, ".")+"body", "%v", err)
	}
	return nil
}

// scanKeys walks the top level of one JSON object and checks its syntax, its
// keys and that nothing follows it.
func scanKeys(data []byte, allowed map[string]bool, prefix string) error {
	where := "body"
	if prefix != "" {
		where = strings.TrimSuffix(prefix, ".")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return syntaxProblem(where, err)
	}
	if tok != json.Delim('{') {
		return invalid(where, "expected a JSON object, got %s", tokenName(tok))
	}
	seen := make(map[string]bool, len(allowed))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxProblem(where, err)
		}
		key := tok.(string) // object keys are strings once Token succeeded
		switch {
		case !allowed[key]:
			return invalid(prefix+key, "unknown field")
		case seen[key]:
			return invalid(prefix+key, "field given more than once")
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return syntaxProblem(prefix+key, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return syntaxProblem(where, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid(where, "unexpected data after the JSON object")
	}
	return nil
}

func syntaxProblem(where string, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return invalid(where, "malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return invalid(where, "malformed JSON: unexpected end of input")
	}
	return invalid(where, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func tokenName(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		if tok == json.Delim('[') {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

func jsonValueName(v string) string {
	switch {
	case v == "bool":
		return "a boolean"
	case v == "array", v == "object":
		return "an " + v
	case v == "number":
		return "a number"
	case strings.HasPrefix(v, "number "):
		return "the " + v // "number 1.5", for an integer field
	}
	return "a " + v
}

// jsonPath turns the Field of a json.UnmarshalTypeError into the path of
// JSON names the client sent. encoding/json puts the Go names of embedded
// structs into Field ("tenantSettings.max_inflight"); those are dropped, so
// a detail never shows a Go type name. t is the type decoded into.
func jsonPath(t reflect.Type, field string) string {
	if field == "" {
		return "body"
	}
	var out []string
	for seg := range strings.SplitSeq(field, ".") {
		st := structOf(t)
		if st == nil {
			out = append(out, seg)
			t = nil
			continue
		}
		if f, ok := jsonField(st, seg); ok {
			out = append(out, seg)
			t = f.Type
			continue
		}
		if f, ok := st.FieldByName(seg); ok && f.Anonymous {
			t = f.Type // an embedded struct: no JSON name of its own
			continue
		}
		out = append(out, seg)
		t = nil
	}
	if len(out) == 0 {
		return "body"
	}
	return strings.Join(out, ".")
}

// structOf returns the struct type t holds (through pointers, slices,
// arrays and maps), or nil.
func structOf(t reflect.Type) reflect.Type {
	for t != nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			return t
		default:
			return nil
		}
	}
	return nil
}

// jsonField finds the field of struct st, promoted ones included, whose
// JSON name is name.
func jsonField(st reflect.Type, name string) (reflect.StructField, bool) {
	for i := range st.NumField() {
		f := st.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if g, ok := jsonField(ft, name); ok {
					return g, true
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

var fieldNameCache sync.Map // reflect.Type -> map[string]bool

// fieldNames returns the JSON names of the fields of the struct *T,
// including those promoted from embedded structs, as encoding/json sees
// them.
func fieldNames(t reflect.Type) map[string]bool {
	if m, ok := fieldNameCache.Load(t); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	addFieldNames(m, t.Elem())
	fieldNameCache.Store(t, m)
	return m
}

func addFieldNames(m map[string]bool, st reflect.Type) {
	for i := range st.NumField() {
		f := st.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFieldNames(m, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = true
	}
}
