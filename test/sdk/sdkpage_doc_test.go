package sdk

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSDKPageShowsTestedCode: every code block of docs/sdk.md follows a
// comment `<!-- from: PATH -->` naming a file that a test runs, and is in
// that file as shown: its lines consecutive there, all indented alike
// (the block drops a common indent), a line of only `// …` or `# …`
// standing for any number of lines.
func TestSDKPageShowsTestedCode(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "docs", "sdk.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	from := regexp.MustCompile(`^<!-- from: (\S+) -->$`)
	blocks := 0
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("docs/sdk.md:%d: the block is not closed", start+1)
		}
		var m []string
		if start > 0 {
			m = from.FindStringSubmatch(lines[start-1])
		}
		if m == nil {
			t.Errorf("docs/sdk.md:%d: a block without <!-- from: PATH --> before it", start+1)
			continue
		}
		blocks++
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m[1])))
		if err != nil {
			t.Errorf("docs/sdk.md:%d: %v", start+1, err)
			continue
		}
		if err := shownIn(body, strings.Split(string(src), "\n")); err != nil {
			t.Errorf("docs/sdk.md:%d: the block is not in %s as shown: %v", start+1, m[1], err)
		}
	}
	if blocks < 18 {
		t.Fatalf("docs/sdk.md has %d checked blocks, want the 6 tasks in 3 SDKs at least", blocks)
	}
}

func isElision(line string) bool {
	s := strings.TrimSpace(line)
	return s == "// …" || s == "# …"
}

// shownIn reports whether snippet's lines are in file: its segments (split
// at elisions) consecutive, in order, each line the file's without one
// common indent.
func shownIn(snippet, file []string) error {
	var segs [][]string
	cur := []string{}
	for _, l := range snippet {
		if isElision(l) {
			segs = append(segs, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, l)
	}
	segs = append(segs, cur)
	if len(segs[0]) == 0 {
		return fmt.Errorf("it starts with an elision")
	}
	// Every place the first segment matches, with the indent it takes there.
	for at := range file {
		indent, ok := matchAt(segs[0], file, at, nil)
		if !ok {
			continue
		}
		next, fine := at+len(segs[0]), true
		for _, seg := range segs[1:] {
			found := false
			for j := next; j < len(file); j++ {
				if _, ok := matchAt(seg, file, j, &indent); ok {
					next, found = j+len(seg), true
					break
				}
			}
			if !found {
				fine = false
				break
			}
		}
		if fine {
			return nil
		}
	}
	return fmt.Errorf("no match for its lines from %q", segs[0][0])
}

// matchAt reports whether seg is file's lines from at, with one indent
// (given, or taken from the first line) added to each non-empty line.
func matchAt(seg, file []string, at int, indent *string) (string, bool) {
	if at+len(seg) > len(file) {
		return "", false
	}
	var ind string
	if indent != nil {
		ind = *indent
	} else {
		first := file[at]
		if !strings.HasSuffix(first, seg[0]) || seg[0] == "" {
			return "", false
		}
		ind = first[:len(first)-len(seg[0])]
		if strings.TrimLeft(ind, " \t") != "" {
			return "", false
		}
	}
	for k, l := range seg {
		f := file[at+k]
		if l == "" {
			if strings.TrimSpace(f) != "" {
				return "", false
			}
			continue
		}
		if f != ind+l {
			return "", false
		}
	}
	return ind, true
}
