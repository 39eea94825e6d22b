package migration

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	ok := fstest.MapFS{
		"m/0002_more.up.sql":   {Data: []byte("B")},
		"m/0001_init.up.sql":   {Data: []byte("A")},
		"m/0001_init.down.sql": {Data: []byte("a")},
		"m/0002_more.down.sql": {Data: []byte("b")},
	}
	ms, err := Load(ok, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Version != 1 || ms[0].Name != "init" || ms[0].Up != "A" || ms[0].Down != "a" ||
		ms[1].Version != 2 || ms[1].Up != "B" {
		t.Fatalf("Load = %+v", ms)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"bad name":     {"m/init.up.sql": {}},
		"missing down": {"m/0001_init.up.sql": {Data: []byte("A")}},
		"gap": {"m/0001_a.up.sql": {Data: []byte("A")}, "m/0001_a.down.sql": {Data: []byte("a")},
			"m/0003_c.up.sql": {Data: []byte("C")}, "m/0003_c.down.sql": {Data: []byte("c")}},
		"other suffix": {"m/0001_a.sql": {}},
	} {
		if _, err := Load(fsys, "m"); err == nil || !strings.Contains(err.Error(), "migration") {
			t.Errorf("%s: Load = %v, want an error", name, err)
		}
	}
}
