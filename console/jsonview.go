package console

import (
	"strconv"
	"strings"
)

// Stored JSON (a payload, a result, a schedule's payload) is shown as a
// tree whose objects and arrays fold (server-rendered <details>, so
// folding works without script), within a budget whatever is stored:
// nesting deeper than maxJSONDepth is shown as "…", and the tree stops
// after about maxJSONShown bytes of text or maxJSONLines lines, each cut
// said in a marker under it, with a link to the raw value (rawJSON),
// itself bounded. Every line costs markup as well as text, so without the
// line budget a value of many tiny members would be a page many times its
// size; without the depth budget an 18 KB payload nested 10,000 levels
// deep would be 10,000 nested elements.
const (
	maxJSONDepth = 20
	maxJSONShown = 32 << 10
	maxJSONLines = 1000
)

// A container is folded by default when it is at least foldDepth levels
// down or has more than foldMembers members; the top level is always
// unfolded.
const (
	foldDepth   = 3
	foldMembers = 20
)

// jsonView is stored JSON as a page shows it.
type jsonView struct {
	Nodes     []*jsonNode // the value's tree within the budget (more than one only for text that is not one JSON value)
	Truncated string      // "" when Nodes are the whole value, else the marker saying what was cut
	Raw       string      // the raw view's URL, set by the page
	// Copy is what the Copy button copies: the stored value itself when
	// the view shows it whole, else "" and the button copies what Raw
	// serves.
	Copy string
}

// jsonNode is one line of the tree: a member (Key set) or an item of an
// array, its value a scalar (Text) or a container (Open set).
type jsonNode struct {
	Key    string // the member's name as written in the JSON, quotes included; "" for an item
	Text   string // a scalar as written ("…" for a container past the depth budget, "{}" or "[]" for an empty one)
	Class  string // the scalar's kind for the style sheet: "jstr", "jnum" or "jlit"
	Open   string // "{" or "[" for a container with members, else ""
	Close  string // the bracket closing Open
	Kids   []*jsonNode
	Count  int    // the container's members, all of them even when the tree was cut inside it
	Unit   string // "key", "keys", "item" or "items", as Count reads
	Folded bool   // folded when the page opens
	Comma  bool   // another member follows
	N      int    // the container's index in the view, which the script keeps fold state by
}

// viewJSON is raw as a tree within the budget; the zero jsonView for none.
func viewJSON(raw []byte) jsonView {
	if len(raw) == 0 {
		return jsonView{}
	}
	nodes, deep, cut := treeBounded(raw, maxJSONDepth, maxJSONShown, maxJSONLines)
	v := jsonView{Nodes: nodes}
	var why []string
	if cut {
		why = append(why, strconv.Itoa(len(raw))+" bytes stored, the first "+strconv.Itoa(maxJSONShown>>10)+
			" KiB or "+strconv.Itoa(maxJSONLines)+" lines shown")
	}
	if deep {
		why = append(why, "depth > "+strconv.Itoa(maxJSONDepth)+" shown as …")
	}
	if len(why) > 0 {
		v.Truncated = "… (truncated: " + strings.Join(why, "; ") + ")"
	} else {
		v.Copy = string(raw)
	}
	return v
}

// treeBounded reads raw (JSON) into a tree up to depth levels, about
// maxText bytes of text and maxLines lines: a value nested deeper is
// "…" and the tree stops once either budget is spent. deep and cut say
// which happened. It reads raw about once whatever raw holds (a
// container the tree stops inside is scanned on to its end, to count its
// members), recurses at most depth levels, and keeps at most maxLines
// nodes; raw that is not JSON comes out as well as it can.
func treeBounded(raw []byte, depth, maxText, maxLines int) (nodes []*jsonNode, deep, cut bool) {
	p := &treeReader{raw: raw, depth: depth, maxText: maxText, maxLines: maxLines}
	for !p.cut {
		p.space()
		if p.i >= len(raw) {
			break
		}
		n := p.value(0, "")
		if n == nil {
			break
		}
		nodes = append(nodes, n)
	}
	return nodes, p.deep, p.cut
}

type treeReader struct {
	raw                      []byte
	i                        int
	depth, maxText, maxLines int
	text, lines, containers  int
	deep, cut                bool
}

func (p *treeReader) space() {
	for p.i < len(p.raw) && isSpace(p.raw[p.i]) {
		p.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// take is up to what is left of the text budget of s, valid UTF-8.
func (p *treeReader) take(s []byte) string {
	if left := p.maxText - p.text; len(s) > left {
		p.cut = true
		s = s[:max(left, 0)]
	}
	p.text += len(s)
	return strings.ToValidUTF8(string(s), "")
}

// value reads the value at p.i (past spaces), level levels down, as the
// member key; nil when the budget is spent first.
func (p *treeReader) value(level int, key string) *jsonNode {
	n := p.node(level, key)
	if n == nil {
		return nil
	}
	c := p.raw[p.i]
	switch c {
	case '{', '[':
		if level >= p.depth {
			p.deep = true
			n.Text = "…"
			p.i = skipValue(p.raw, p.i)
			return n
		}
		p.container(n, level)
	case '"':
		j := stringEnd(p.raw, p.i)
		n.Text, n.Class = p.take(p.raw[p.i:j]), "jstr"
		p.i = j
	default:
		j := p.i
		for j < len(p.raw) && !strings.ContainsRune(" \t\n\r{}[],:\"", rune(p.raw[j])) {
			j++
		}
		if j == p.i {
			j++ // a byte no JSON starts with: show it as it is
		}
		n.Text, n.Class = p.take(p.raw[p.i:j]), "jnum"
		switch n.Text {
		case "true", "false", "null":
			n.Class = "jlit"
		}
		p.i = j
	}
	return n
}

// node is a line for the member key, level levels down, its value not
// read yet; nil when the budget is spent.
func (p *treeReader) node(level int, key string) *jsonNode {
	if p.text >= p.maxText || p.lines >= p.maxLines {
		p.cut = true
		return nil
	}
	p.lines++
	n := &jsonNode{Key: p.take([]byte(key))}
	p.text += 2 * level // the indent, as the text reads
	return n
}

// container reads the object or array at p.i into n.
func (p *treeReader) container(n *jsonNode, level int) {
	open := p.raw[p.i]
	n.Open, n.Close, n.Unit = "{", "}", "key"
	if open == '[' {
		n.Open, n.Close, n.Unit = "[", "]", "item"
	}
	n.N = p.containers
	p.containers++
	p.text += 2
	p.i++
	for {
		p.space()
		if p.i >= len(p.raw) {
			break
		}
		c := p.raw[p.i]
		if c == '}' || c == ']' {
			p.i++
			break
		}
		if c == ',' {
			p.i++
			continue
		}
		key := ""
		if open == '{' && c == '"' {
			j := stringEnd(p.raw, p.i)
			key = string(p.raw[p.i:j])
			p.i = j
			p.space()
			if p.i < len(p.raw) && p.raw[p.i] == ':' {
				p.i++
			}
			p.space()
			if p.i >= len(p.raw) {
				break
			}
		}
		var kid *jsonNode
		if c := p.raw[p.i]; key != "" && (c == '}' || c == ']' || c == ',') {
			// A member with no value (not JSON): its name alone, so
			// the bracket still closes this container.
			kid = p.node(level+1, key)
		} else {
			kid = p.value(level+1, key)
		}
		if kid == nil {
			break
		}
		if len(n.Kids) > 0 {
			n.Kids[len(n.Kids)-1].Comma = true
		}
		n.Kids = append(n.Kids, kid)
		if p.cut {
			break
		}
	}
	n.Count = len(n.Kids)
	if p.cut {
		// The tree stops here: count the members not shown and go on
		// after this container, for the containers around it.
		more, end := membersLeft(p.raw, p.i)
		n.Count += more
		p.i = end
	}
	if n.Count != 1 {
		n.Unit += "s"
	}
	if n.Count == 0 && !p.cut {
		n.Text, n.Open = n.Open+n.Close, ""
		return
	}
	n.Folded = level > 0 && (level >= foldDepth || n.Count > foldMembers)
}

// membersLeft counts the members of the container raw[i] is inside of,
// from i (between members, or at the start of one not read) to its end,
// and says where it ends (len(raw) when it does not).
func membersLeft(raw []byte, i int) (n, end int) {
	level, pending := 0, false
	for j := i; j < len(raw); j++ {
		switch c := raw[j]; {
		case isSpace(c):
		case c == '"':
			j = stringEnd(raw, j) - 1
			pending = true
		case c == '{' || c == '[':
			level++
			pending = true
		case c == '}' || c == ']':
			if level == 0 {
				if pending {
					n++
				}
				return n, j + 1
			}
			level--
		case c == ',' && level == 0:
			if pending {
				n++
			}
			pending = false
		default:
			pending = true
		}
	}
	if pending {
		n++
	}
	return n, len(raw)
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
