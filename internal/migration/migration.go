// Package migration reads a backend's embedded schema migrations: files
// named NNNN_name.up.sql and NNNN_name.down.sql, numbered 1, 2, 3... with no
// gaps. How they are applied is the backend's business.
package migration

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered step with its up and down SQL.
type Migration struct {
	Version  int
	Name     string
	Up, Down string
}

// Load reads the migrations in dir of fsys, ordered by version. Every step
// needs both files.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		file := e.Name()
		num, rest, ok := strings.Cut(file, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("bad migration file name %q", file)
		}
		body, err := fs.ReadFile(fsys, dir+"/"+file)
		if err != nil {
			return nil, err
		}
		m := byVersion[v]
		if m == nil {
			m = &Migration{Version: v}
			byVersion[v] = m
		}
		switch {
		case strings.HasSuffix(rest, ".up.sql"):
			m.Name, m.Up = strings.TrimSuffix(rest, ".up.sql"), string(body)
		case strings.HasSuffix(rest, ".down.sql"):
			m.Down = string(body)
		default:
			return nil, fmt.Errorf("bad migration file name %q", file)
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("migration %d lacks its up or down file", m.Version)
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations are not numbered 1, 2, 3...: found %d at position %d", m.Version, i+1)
		}
	}
	return out, nil
}
