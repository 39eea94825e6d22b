package store

import (
	"encoding/json"
	"testing"
)

// A fan-in step holds the four keys of the HTTP contract for every child,
// result and error null when the child has none, and reads back the same.
func TestFanInStepShape(t *testing.T) {
	t.Parallel()
	children := []FanInChild{
		{ExecutionID: "a", Status: StatusSucceeded, Result: json.RawMessage(`{"n":1}`)},
		{ExecutionID: "b", Status: StatusFailed, Error: "boom"},
		{ExecutionID: "c", Status: StatusRunning},
	}
	got := string(FanInStep("wait", children, false, MaxJournalBytes))
	want := `{"children":[{"execution_id":"a","status":"succeeded","result":{"n":1},"error":null},` +
		`{"execution_id":"b","status":"failed","result":null,"error":"boom"},` +
		`{"execution_id":"c","status":"running","result":null,"error":null}],"timed_out":false}`
	if got != want {
		t.Fatalf("fan-in step\n got %s\nwant %s", got, want)
	}
	var back FanInResult
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Children) != 3 || string(back.Children[0].Result) != `{"n":1}` || back.Children[1].Result != nil ||
		back.Children[1].Error != "boom" || back.Children[2].Error != "" {
		t.Fatalf("read back: %+v", back)
	}
}

// Results that do not fit are left out from the first that does not, and
// the step stays within its room.
func TestFanInStepRoom(t *testing.T) {
	t.Parallel()
	big := json.RawMessage(`"0123456789012345678901234567890123456789"`)
	children := []FanInChild{
		{ExecutionID: "a", Status: StatusSucceeded, Result: big},
		{ExecutionID: "b", Status: StatusSucceeded, Result: big},
	}
	full := FanInStep("w", children, true, MaxJournalBytes)
	bare := FanInStep("w", []FanInChild{{ExecutionID: "a", Status: StatusSucceeded}, {ExecutionID: "b", Status: StatusSucceeded}}, true, MaxJournalBytes)
	room := StepSize("w", full) - 1
	got := FanInStep("w", children, true, room)
	if StepSize("w", got) > room {
		t.Fatalf("step of %d bytes over its room %d: %s", StepSize("w", got), room, got)
	}
	var r FanInResult
	if err := json.Unmarshal(got, &r); err != nil {
		t.Fatal(err)
	}
	if !r.ResultsOmitted || !r.TimedOut || r.Children[0].Result == nil || r.Children[1].Result != nil {
		t.Fatalf("cut step: %s", got)
	}
	// Exactly the room of the first result: it is kept.
	exact := StepSize("w", bare) + len(`,"results_omitted":true`) + len(big) - len("null")
	got = FanInStep("w", children, true, exact)
	if err := json.Unmarshal(got, &r); err != nil || r.Children[0].Result == nil || StepSize("w", got) > exact {
		t.Fatalf("exact room %d: %s", exact, got)
	}
}
