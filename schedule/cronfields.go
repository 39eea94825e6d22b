package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// cronField describes one field of a cron expression, for checking it
// before robfig/cron parses it. robfig accepts some input that means
// something other than it looks ("*-5" is every minute, "," a field that
// never matches) and its errors do not name the field; checkCronFields
// refuses the first and words the second.
type cronField struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i ("jan" is 1); nil if none
	hint     string   // appended to an out-of-range message
}

var (
	secondField = cronField{name: "second", min: 0, max: 59}
	minuteField = cronField{name: "minute", min: 0, max: 59}
	hourField   = cronField{name: "hour", min: 0, max: 23}
	domField    = cronField{name: "day-of-month", min: 1, max: 31}
	monthField  = cronField{name: "month", min: 1, max: 12, names: []string{
		"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
	}}
	dowField = cronField{name: "day-of-week", min: 0, max: 6, names: []string{
		"sun", "mon", "tue", "wed", "thu", "fri", "sat",
	}, hint: "; Sunday is 0"}
)

// checkCronFields checks the fields of a cron expression (already split on
// white space) and returns the reason it is wrong, to follow `cron "...": `.
func checkCronFields(fields []string) error {
	var layout []cronField
	switch len(fields) {
	case 5:
		layout = []cronField{minuteField, hourField, domField, monthField, dowField}
	case 6:
		layout = []cronField{secondField, minuteField, hourField, domField, monthField, dowField}
	default:
		return fmt.Errorf("it has %d fields; a cron expression has 5 (minute hour day-of-month month day-of-week) or 6 (second minute hour day-of-month month day-of-week)", len(fields))
	}
	for i, f := range layout {
		if err := f.check(fields[i]); err != nil {
			return err
		}
	}
	return nil
}

// check checks one field: a comma-separated list of items, each "*", "?", a
// value or a range "a-b", optionally followed by "/step".
func (f cronField) check(text string) error {
	for item := range strings.SplitSeq(text, ",") {
		if item == "" {
			return fmt.Errorf("the %s field %q has an empty item in its list", f.name, text)
		}
		rng, stepText, hasStep := strings.Cut(item, "/")
		if strings.Contains(stepText, "/") {
			return fmt.Errorf("the %s field item %q has more than one \"/\"", f.name, item)
		}
		lowText, highText, hasHigh := strings.Cut(rng, "-")
		if strings.Contains(highText, "-") {
			return fmt.Errorf("the %s field item %q has more than one \"-\"", f.name, item)
		}
		if lowText == "*" || lowText == "?" {
			if hasHigh {
				return fmt.Errorf("the %s field item %q is not valid: a range cannot start with %q", f.name, item, lowText)
			}
		} else {
			low, err := f.value(lowText, item)
			if err != nil {
				return err
			}
			var high int
			switch {
			case hasHigh:
				if high, err = f.value(highText, item); err != nil {
					return err
				}
			case hasStep:
				high = f.max // "5/15" means 5-max/15
			default:
				high = low
			}
			if low > high {
				return fmt.Errorf("the %s range %q runs backwards: %d is after %d", f.name, rng, low, high)
			}
		}
		if hasStep {
			step, err := strconv.Atoi(stepText)
			if err != nil || step < 1 || !isDigits(stepText) {
				return fmt.Errorf("the %s field item %q has step %q; a step is a whole number of at least 1", f.name, item, stepText)
			}
		}
	}
	return nil
}

// value parses one value of the field, part of item: a number or, for
// month and day-of-week, a three-letter name.
func (f cronField) value(text, item string) (int, error) {
	if text == "" {
		return 0, fmt.Errorf("the %s field item %q is missing a number", f.name, item)
	}
	for i, name := range f.names {
		if strings.EqualFold(text, name) {
			return f.min + i, nil
		}
	}
	if !isDigits(text) {
		if f.names != nil {
			return 0, fmt.Errorf("the %s field has %q, which is neither a number nor a name (%s-%s)", f.name, text, f.names[0], f.names[len(f.names)-1])
		}
		return 0, fmt.Errorf("the %s field has %q, which is not a number", f.name, text)
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < f.min || n > f.max {
		return 0, fmt.Errorf("the %s %s is out of range (%d-%d%s)", f.name, text, f.min, f.max, f.hint)
	}
	return n, nil
}

// isDigits reports whether s is made of ASCII digits only.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
