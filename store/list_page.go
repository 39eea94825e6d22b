package store

// ListPage cuts one List page from the matches a backend reads in page
// order (newest first, from After), the same way in every backend: the
// backend reads one more match than the page holds, so that the extra one
// tells whether there is a next page, and adds them until Add says the
// page is done. The Redis tenant router's merge of tenants' pages can cut
// its page with it too.
type ListPage struct {
	limit, maxBytes int
	size            int // bytes of the items' payloads and results
	res             ListResult
	cut             bool // MaxBytes ended the page
}

// Page starts p's page of limit items (Paging's answer).
func (p *ListParams) Page(limit int) *ListPage {
	return &ListPage{limit: limit, maxBytes: p.MaxBytes}
}

// Add appends e and reports whether the page is done: it holds one item
// more than the limit (the first of the next page, which Result drops and
// whose bytes do not count), or e's payload and result bring the page's
// bytes to MaxBytes (the page ends after e).
func (pg *ListPage) Add(e *Execution) bool {
	pg.res.Items = append(pg.res.Items, e)
	if len(pg.res.Items) > pg.limit {
		return true
	}
	pg.size += len(e.Payload) + len(e.Result)
	if pg.maxBytes > 0 && pg.size >= pg.maxBytes {
		pg.res.Next, pg.cut = e.ID, true
		return true
	}
	return false
}

// Result returns the page. Past the limit, it holds the limit's items and
// Next is the last one's id; ended by MaxBytes, Next is the id of the item
// that reached it; otherwise Next is rest: where a read that stopped before
// the list's end resumes (the last id a Scan-bounded read examined), or ""
// when the list ended.
func (pg *ListPage) Result(rest string) *ListResult {
	switch {
	case pg.cut:
	case len(pg.res.Items) > pg.limit:
		pg.res.Items = pg.res.Items[:pg.limit]
		pg.res.Next = pg.res.Items[pg.limit-1].ID
	default:
		pg.res.Next = rest
	}
	return &pg.res
}
