package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
)

// Load returns the import graph of the module containing dir: its packages
// (./..., without tests) and everything they depend on, as `go list -deps`
// reports them.
func Load(dir string) (*Graph, error) {
	gomod, err := goCmd(dir, "env", "GOMOD")
	if err != nil {
		return nil, err
	}
	gomod = strings.TrimSpace(gomod)
	if gomod == "" || gomod == "/dev/null" || gomod == "NUL" {
		return nil, fmt.Errorf("arch: %s is not in a module", dir)
	}
	root := filepath.Dir(gomod)
	module, err := goCmd(root, "list", "-m")
	if err != nil {
		return nil, err
	}
	out, err := goCmd(root, "list", "-deps", "-json=ImportPath,Standard,Imports,Error", "./...")
	if err != nil {
		return nil, err
	}
	g := &Graph{Module: strings.TrimSpace(module), Packages: map[string]*Package{}}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Standard   bool
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("arch: go list: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("arch: go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		g.Packages[p.ImportPath] = &Package{Path: p.ImportPath, Standard: p.Standard, Imports: p.Imports}
	}
	if g.Packages[g.Module] == nil {
		return nil, fmt.Errorf("arch: go list did not list the module's package %s", g.Module)
	}
	return g, nil
}

func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("arch: go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out), nil
}
