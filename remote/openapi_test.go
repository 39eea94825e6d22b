package remote

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// wireTypes pairs every schema of api/openapi.json the client sends or
// reads with the Go type it uses for it. Execution is checked as
// SubmitResponse, the Execution schema and the submit's deduplicated.
var wireTypes = map[string]any{
	"Problem":             Problem{},
	"SubmitResponse":      Execution{},
	"SubmitRequest":       SubmitRequest{},
	"BatchRequest":        batchRequest{},
	"BatchItem":           BatchItem{},
	"BatchResponse":       batchResponse{},
	"ExecutionList":       ExecutionPage{},
	"TenantCreateRequest": TenantSpec{},
	"TenantCreated":       TenantCreated{},
	"Tenant":              Tenant{},
	"TenantPatch":         TenantPatch{},
	"APIKey":              APIKey{},
	"APIKeyInfo":          APIKeyInfo{},
	"APIKeyList":          APIKeyList{},
	"ClaimRequest":        ClaimRequest{},
	"ClaimResponse":       claimResponse{},
	"Lease":               Lease{},
	"HeartbeatRequest":    HeartbeatRequest{},
	"HeartbeatResponse":   HeartbeatResponse{},
	"CompleteRequest":     CompleteRequest{},
	"FailRequest":         FailRequest{},
	"ReleaseRequest":      ReleaseRequest{},
	"Health":              Health{},
	"ScheduleRequest":     ScheduleSpec{},
	"Schedule":            Schedule{},
	"ScheduleList":        SchedulePage{},
	"RateLimitRequest":    RateLimitSpec{},
	"RateLimit":           RateLimit{},
	"StepRequest":         StepRequest{},
	"StepRecorded":        StepRecorded{},
	"SuspendRequest":      SuspendRequest{},
	"SignalRequest":       signalRequest{},
	"SignalResponse":      SignalResult{},
	"Step":                Step{},
	"StepList":            StepPage{},
	"Attempt":             Attempt{},
	"AttemptList":         AttemptList{},
	"StreamTicket":        StreamTicket{},
	"Explanation":         Explanation{},
	"Gate":                Gate{},
	"SpawnRequest":        SpawnRequest{},
	"Spawned":             Spawned{},
	"ChildRef":            ChildRef{},
	"PublishRequest":      publishRequest{},
	"PublishResponse":     Published{},
	"EventStart":          EventStart{},
	"SubscriptionRequest": SubscriptionSpec{},
	"Subscription":        Subscription{},
	"SubscriptionList":    SubscriptionPage{},
}

// notWire are the schemas that are no object of their own: enums, and
// Execution, checked within SubmitResponse.
var notWire = []string{"ExecutionStatus", "RunOutcome", "Execution"}

// TestWireTypesMatchOpenAPI compares, both ways, the properties of every
// schema the client uses with the JSON fields of its Go type: a property
// without a field, or a field without a property, fails. A request schema's
// readOnly properties (a GET answer sent back, accepted and ignored) need no
// field. Every object schema of the document must be paired or listed in
// notWire, so a new schema fails too until the client covers it.
func TestWireTypesMatchOpenAPI(t *testing.T) {
	schemas := loadSchemas(t)
	for name := range schemas {
		if _, ok := wireTypes[name]; !ok && !slices.Contains(notWire, name) {
			t.Errorf("schema %s has no Go type in wireTypes (nor a place in notWire)", name)
		}
	}
	for name, v := range wireTypes {
		props, ok := properties(schemas, name)
		if !ok {
			t.Errorf("%s: no such object schema in api/openapi.json", name)
			continue
		}
		checkFields(t, name, reflect.TypeOf(v), props)
	}
}

// property is what the test reads of a schema's property.
type property struct {
	ReadOnly bool `json:"readOnly"`
}

type schema struct {
	Ref        string              `json:"$ref"`
	AllOf      []schema            `json:"allOf"`
	OneOf      []schema            `json:"oneOf"`
	Properties map[string]property `json:"properties"`
}

func loadSchemas(t *testing.T) map[string]schema {
	t.Helper()
	data, err := os.ReadFile("../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas
}

// properties is the properties of the schema name, its allOf, oneOf (a
// union, which its Go type holds as one struct) and $refs merged.
func properties(schemas map[string]schema, name string) (map[string]property, bool) {
	s, ok := schemas[name]
	if !ok {
		return nil, false
	}
	out := map[string]property{}
	var merge func(s schema)
	merge = func(s schema) {
		if s.Ref != "" {
			merge(schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")])
		}
		for _, sub := range append(s.AllOf, s.OneOf...) {
			merge(sub)
		}
		for k, p := range s.Properties {
			out[k] = p
		}
	}
	merge(s)
	return out, len(out) > 0
}

// jsonFields is the JSON names of a struct's encoded fields (an embedded
// struct's promoted ones included).
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			if f.IsExported() {
				out = append(out, jsonFields(f.Type)...)
			}
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

func checkFields(t *testing.T, name string, typ reflect.Type, props map[string]property) {
	t.Helper()
	fields := jsonFields(typ)
	for _, f := range fields {
		if _, ok := props[f]; !ok {
			t.Errorf("%s: %s has field %q, which the schema does not have", name, typ.Name(), f)
		}
	}
	request := strings.HasSuffix(name, "Request") || name == "TenantPatch"
	for p, prop := range props {
		if request && prop.ReadOnly {
			continue
		}
		if !slices.Contains(fields, p) {
			t.Errorf("%s: the schema's property %q is no field of %s", name, p, typ.Name())
		}
	}
}
