package console

import (
	"strconv"
	"strings"
)

// Stored JSON (a payload, a result, a schedule's payload) is shown
// indented, within a budget whatever is stored: nesting deeper than
// maxJSONDepth is shown as "…" and the text stops at maxJSONShown bytes,
// each cut said in a marker under it, with a link to the raw value
// (rawJSON), itself bounded. Indenting costs two spaces a level per line,
// so without the depth budget an 18 KB payload nested 10,000 levels deep
// would be a page of hundreds of MB.
const (
	maxJSONDepth = 20
	maxJSONShown = 32 << 10
)

// jsonView is stored JSON as a page shows it.
type jsonView struct {
	Text      string // indented, within the budget
	Truncated string // "" when Text is the whole value, else the marker saying what was cut
	Raw       string // the raw view's URL, set by the page when Truncated
}

// viewJSON is raw indented within the budget; the zero jsonView for none.
func viewJSON(raw []byte) jsonView {
	if len(raw) == 0 {
		return jsonView{}
	}
	text, deep, cut := indentBounded(raw, maxJSONDepth, maxJSONShown)
	v := jsonView{Text: text}
	var why []string
	if cut {
		why = append(why, strconv.Itoa(len(raw))+" bytes stored, "+strconv.Itoa(maxJSONShown>>10)+" KiB shown")
	}
	if deep {
		why = append(why, "depth > "+strconv.Itoa(maxJSONDepth)+" shown as …")
	}
	if len(why) > 0 {
		v.Truncated = "… (truncated: " + strings.Join(why, "; ") + ")"
	}
	return v
}

// indentBounded indents raw (JSON, as json.Indent with two spaces) up to
// depth levels and about max bytes: a value nested deeper is written "…",
// and the text stops once it reaches max. deep and cut say which
// happened. It reads raw once, writes at most max plus one token, and
// keeps no state per level, so its cost is bounded whatever raw holds; raw
// that is not JSON comes out as well as it can.
func indentBounded(raw []byte, depth, max int) (text string, deep, cut bool) {
	var b strings.Builder
	open := 0            // containers open
	pendingOpen := false // a container just opened: the next token goes on a new line, unless it closes it
	newline := func(level int) {
		b.WriteByte('\n')
		for range min(level, depth) {
			b.WriteString("  ")
		}
	}
	for i := 0; i < len(raw); {
		if b.Len() >= max {
			return strings.ToValidUTF8(b.String(), ""), deep, true
		}
		c := raw[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		if pendingOpen && c != '}' && c != ']' {
			pendingOpen = false
			newline(open)
		}
		switch c {
		case '{', '[':
			if open >= depth {
				deep = true
				b.WriteString("…")
				i = skipValue(raw, i)
				continue
			}
			open++
			pendingOpen = true
			b.WriteByte(c)
			i++
		case '}', ']':
			if pendingOpen {
				pendingOpen = false
			} else {
				newline(open - 1)
			}
			open = max0(open - 1)
			b.WriteByte(c)
			i++
		case ',':
			b.WriteByte(',')
			newline(open)
			i++
		case ':':
			b.WriteString(": ")
			i++
		case '"':
			j := stringEnd(raw, i)
			b.Write(raw[i:min(j, i+max-b.Len()+1)])
			i = j
		default:
			j := i
			for j < len(raw) && !strings.ContainsRune(" \t\n\r{}[],:\"", rune(raw[j])) {
				j++
			}
			if j == i {
				j++ // a byte no JSON starts with: write it as it is
			}
			b.Write(raw[i:min(j, i+max-b.Len()+1)])
			i = j
		}
	}
	if b.Len() > max {
		return strings.ToValidUTF8(b.String(), ""), deep, true
	}
	return b.String(), deep, false
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// stringEnd is the index after the JSON string starting at raw[i] (a
// quote), or len(raw) when it does not end.
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// skipValue is the index after the array or object starting at raw[i],
// or len(raw) when it does not end.
func skipValue(raw []byte, i int) int {
	level := 0
	for j := i; j < len(raw); j++ {
		switch raw[j] {
		case '"':
			j = stringEnd(raw, j) - 1
		case '{', '[':
			level++
		case '}', ']':
			if level--; level == 0 {
				return j + 1
			}
		}
	}
	return len(raw)
}
