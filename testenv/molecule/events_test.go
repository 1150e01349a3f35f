package molecule

import (
	"reflect"
	"strings"
	"testing"
)

// journal is what systemd 257 logged (journalctl -o json _PID=1, fields trimmed) for
// start, restart, reload, try-restart and stop of x.service, and a failed start of y.
const journal = `{"MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"x.service","JOB_TYPE":"start","JOB_RESULT":"done"}
{"MESSAGE_ID":"de5b426a63be47a7b6ac3eaac82e2f6f","UNIT":"x.service","JOB_TYPE":"stop"}
{"MESSAGE_ID":"7ad2d189f7e94e70a38c781354912448","UNIT":"x.service"}
{"MESSAGE_ID":"9d1aaa27d60140bd96365438aad20286","UNIT":"x.service","JOB_TYPE":"restart","JOB_RESULT":"done"}
{"MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"x.service","JOB_TYPE":"start","JOB_RESULT":"done"}
{"MESSAGE_ID":"d34d037fff1847e6ae669a370e694725","UNIT":"x.service","JOB_TYPE":"reload"}
{"MESSAGE_ID":"7b05ebc668384222baa8881179cfda54","UNIT":"x.service","JOB_TYPE":"reload","JOB_RESULT":"done"}
{"MESSAGE_ID":"9d1aaa27d60140bd96365438aad20286","UNIT":"x.service","JOB_TYPE":"restart","JOB_RESULT":"done"}
{"MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"x.service","JOB_TYPE":"start","JOB_RESULT":"done"}
{"MESSAGE_ID":"9d1aaa27d60140bd96365438aad20286","UNIT":"x.service","JOB_TYPE":"stop","JOB_RESULT":"done"}
{"MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"y.service","JOB_TYPE":"start","JOB_RESULT":"failed"}
{"MESSAGE":"Reloading.","MESSAGE_ID":""}
not json
{"MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"richt-rpm-transaction-000000000001.scope","JOB_TYPE":"start","JOB_RESULT":"done"}
{"MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"user-0.slice","JOB_TYPE":"start","JOB_RESULT":"done"}
{"MESSAGE_ID":"9d1aaa27d60140bd96365438aad20286","UNIT":"z.service","JOB_TYPE":"restart","JOB_RESULT":"done"}
`

func TestParseJournal(t *testing.T) {
	got := ParseJournal(journal)
	want := map[string]UnitEvents{
		"x.service": {Started: 1, Restarted: 2, Reloaded: 1, Stopped: 1},
		"z.service": {Stopped: 1}, // a restart whose start never came
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseJournal = %+v, want %+v", got, want)
	}
	if s := got["x.service"].String(); s != "started 1, restarted 2, reloaded 1, stopped 1" {
		t.Errorf("String = %q", s)
	}
	if ParseJournal("") == nil || len(ParseJournal("")) != 0 {
		t.Error("empty journal: want an empty map")
	}
}

func TestExpectationMet(t *testing.T) {
	for _, tc := range []struct {
		want string
		got  UnitEvents
		ok   bool
	}{
		{"restarted", UnitEvents{Restarted: 1}, true},
		{"restarted", UnitEvents{Restarted: 2}, false},
		{"restarted", UnitEvents{Restarted: 1, Reloaded: 1}, false},
		{"reloaded", UnitEvents{Reloaded: 1}, true},
		{"reloaded", UnitEvents{Restarted: 1}, false},
		{"started", UnitEvents{Started: 1}, true},
		{"stopped", UnitEvents{Stopped: 1}, true},
		{"untouched", UnitEvents{}, true},
		{"untouched", UnitEvents{Reloaded: 1}, false},
	} {
		if got := expectationMet(tc.want, tc.got); got != tc.ok {
			t.Errorf("expectationMet(%s, %+v) = %t", tc.want, tc.got, got)
		}
	}
	if (UnitEvents{}).Outcome() != "untouched" || (UnitEvents{Reloaded: 2}).Outcome() != "reloaded 2" {
		t.Error("Outcome")
	}
}

func TestFormatEvents(t *testing.T) {
	got := FormatEvents("i", map[string]UnitEvents{"b.service": {Reloaded: 1}, "a.service": {Started: 1}})
	if strings.Join(got, "|") != "i: a.service started 1|i: b.service reloaded 1" {
		t.Errorf("FormatEvents = %v", got)
	}
	if got := FormatEvents("i", nil); got[0] != "i: no unit started, restarted, reloaded or stopped" {
		t.Errorf("FormatEvents(nil) = %v", got)
	}
}
