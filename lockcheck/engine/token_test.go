package engine

import (
	"reflect"
	"testing"
	"time"
)

// A token says every kind of step, a lost reply and a cancelled
// context among them, and reads back as the same schedule.
func TestTokenRoundTrip(t *testing.T) {
	s := []Choice{
		{Kind: Deliver, Client: 0}, {Kind: LoseIt, Client: 0}, {Kind: Tick}, {Kind: DeliverWD, Client: 1},
		{Kind: CrashIt, Client: 1}, {Kind: PauseIt, Client: 2}, {Kind: SkewIt, Client: 2}, {Kind: Deliver, Client: 1, Node: 2},
		{Kind: RestartIt, Client: -1, Node: 3}, {Kind: CancelIt, Client: 1}, {Kind: CancelAfterIt, Client: 0},
	}
	r := Result{Verdict: Oversold, Clients: 3, Schedule: s, Faults: Crash | Lost | Cancel,
		Config: Config{Sections: 1, TTL: 2 * time.Second, MaxFaults: 2, MaxTicks: 3}}
	tok := r.Token()
	if want := "lc1:3:1:2000:crash+lost+cancel:2:3:A.lA.t.wB.xB.pC.sC.B2.r3.cB.kA"; tok != want {
		t.Fatalf("token %q, want %q", tok, want)
	}
	got, err := ParseToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Steps, s) || got.Clients != 3 || got.Config.Faults != Crash|Lost|Cancel || got.Config.TTL != 2*time.Second {
		t.Errorf("ParseToken(%q) = %+v, want the schedule it came from", tok, got)
	}
	if _, err := ParseToken("lc1:2:1:2000:crash+lost:1:2:lC"); err == nil {
		t.Error("a lost reply of a client that is not there: parsed")
	}
}
