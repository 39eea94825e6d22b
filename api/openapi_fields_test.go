package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIFieldsMatchCode checks the schemas of the execution and the
// lease list exactly the fields the server answers with, and require each
// field the server always writes (omitempty ones are not required).
func TestOpenAPIFieldsMatchCode(t *testing.T) {
	t.Parallel()
	var root map[string]any
	if err := json.Unmarshal(openAPIDocument, &root); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		schema string
		typ    reflect.Type
		skip   []string // answered under another schema
	}{
		{"Execution", reflect.TypeFor[execution](), []string{"deduplicated"}},
		{"Lease", reflect.TypeFor[lease](), nil},
		{"Explanation", reflect.TypeFor[explainResponse](), nil},
		{"Subscription", reflect.TypeFor[subscriptionView](), nil},
		{"PublishResponse", reflect.TypeFor[publishResponse](), nil},
		{"EventStart", reflect.TypeFor[eventStart](), nil},
		{"Tenant", reflect.TypeFor[tenant](), nil},
		{"TenantCreated", reflect.TypeFor[createdTenant](), nil},
	} {
		props, _ := dig(root, "components", "schemas", c.schema, "properties").(map[string]any)
		var required []string
		for _, r := range dig(root, "components", "schemas", c.schema, "required").([]any) {
			required = append(required, r.(string))
		}
		fields := map[string]bool{}
		for f := range c.typ.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || slices.Contains(c.skip, name) {
				continue
			}
			fields[name] = true
			if props[name] == nil {
				t.Errorf("%s: field %s is not in the document", c.schema, name)
			}
			if omit := strings.Contains(opts, "omitempty"); omit == slices.Contains(required, name) {
				t.Errorf("%s: field %s: omitempty %v, but required %v in the document", c.schema, name, omit, !omit)
			}
		}
		for name := range props {
			if !fields[name] {
				t.Errorf("%s: the document lists %s, which the server does not answer", c.schema, name)
			}
		}
	}
}
