package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
)

// Lists paged by tenant then name (schedules, subscriptions) share their
// page parameters, limit and cursor. A cursor is the last item of a page,
// its tenant and name as a JSON array in unpadded base64url: opaque to
// clients.

// maxNameCursor bounds a decoded cursor: a tenant and a name,
// JSON-encoded.
const maxNameCursor = 1024

// bindNamePage reads hr's page parameters, its only query parameters:
// limit (1..max, def when absent) and cursor (absent: the first page; its
// tenant and name are then "").
func bindNamePage(hr *http.Request, def, max int) (limit int, tenant, name string, err error) {
	q, err := query(hr, "limit", "cursor")
	if err != nil {
		return 0, "", "", err
	}
	if limit, err = queryLimit(q, def, max); err != nil {
		return 0, "", "", err
	}
	if v := q.Get("cursor"); v != "" {
		var ok bool
		if tenant, name, ok = decodeNameCursor(v); !ok {
			return 0, "", "", invalid("cursor", "not a cursor this server issued; use next_cursor of a previous page")
		}
	}
	return limit, tenant, name, nil
}

// namePage cuts list, read with a limit one above limit, to the page: its
// first limit items, and the cursor after the last of them when more
// follow (nil at the end).
func namePage[T any](list []T, limit int, ref func(T) (tenant, name string)) ([]T, *string) {
	if len(list) <= limit {
		return list, nil
	}
	c := encodeNameCursor(ref(list[limit-1]))
	return list[:limit], &c
}

func encodeNameCursor(tenant, name string) string {
	b, _ := json.Marshal([2]string{tenant, name}) // strings always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeNameCursor is the tenant and name of a cursor encodeNameCursor
// made; ok false for anything else (both are never empty).
func decodeNameCursor(c string) (tenant, name string, ok bool) {
	if len(c) > base64.RawURLEncoding.EncodedLen(maxNameCursor) {
		return "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", "", false
	}
	var ref []string
	if err := json.Unmarshal(b, &ref); err != nil || len(ref) != 2 || ref[0] == "" || ref[1] == "" {
		return "", "", false
	}
	return ref[0], ref[1], true
}
