package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/race"
)

// postRace runs one race through the stack's /race and returns its result.
func postRace(t *testing.T, lb, query string) race.Result {
	t.Helper()
	resp, err := http.Post(lb+"/race?"+query, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /race?%s: %s", query, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			name = ev
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || name == "progress" {
			continue
		}
		if name != "result" {
			t.Fatalf("race %s: %s %s", query, name, data)
		}
		var res race.Result
		if err := json.Unmarshal([]byte(data), &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Fatalf("race %s: no result (%v)", query, sc.Err())
	return race.Result{}
}

// Every failure drawn, from data the instances keep across their own
// crashes. setnx under crash: DEADLOCK, and the stuck lock is in the
// result: from the dead holder's acquisition, its key read back from
// Redis with no TTL, the waiters that gave up; no negative count; crash
// marks only where an instance crashed; a race stopped early says why.
// setnx-expire under crash-before-expire: its stuck lock, though its
// holder died before its section began.
// del-setnx under crash-wait: OVERSOLD, and its double grant is there
// as overlapping sections, though instances crashed.
func TestFailuresDrawnSurviveCrashes(t *testing.T) {
	lane(t)
	st := startStack(t)
	lb := st.URL()

	res := postRace(t, lb, "lock=setnx&endpoint=sale&scenario=crash")
	tl := res.Timeline
	if res.Verdict != bench.VerdictDeadlock || tl == nil {
		t.Fatalf("setnx under crash: %s, timeline %v: want DEADLOCK with a timeline", res.Verdict, tl != nil)
	}
	if res.Oversold < 0 || res.LostUpdates < 0 || res.LostAnswers < 0 {
		t.Errorf("a negative count: oversold %d, lost updates %d, lost answers %d", res.Oversold, res.LostUpdates, res.LostAnswers)
	}
	if tl.Verdict != bench.VerdictDeadlock || tl.Interrupted == 0 {
		t.Errorf("timeline verdict %q, %d sections cut by a crash: want DEADLOCK, at least 1", tl.Verdict, tl.Interrupted)
	}
	s := tl.Stuck
	if s == nil {
		t.Fatalf("DEADLOCK without a stuck lock; sections %v", tl.Sections)
	}
	cut := tl.Sections[s.Section]
	if cut[4]&race.FlagInterrupted == 0 || cut[1] != s.FromUs || int(cut[0]) != s.Lane || s.FromUs > tl.EndUs {
		t.Errorf("the stuck lock %+v is not the section a crash cut: %v (end %d)", s, cut, tl.EndUs)
	}
	if !s.Read || !s.Held || s.TTLMs != -1 || !strings.HasPrefix(s.Key, "lock:") {
		t.Errorf("the stuck lock read back: %+v, want key lock:..., held, no TTL (-1)", s)
	}
	if len(tl.GaveUp) == 0 || res.Codes["503"] == 0 {
		t.Errorf("no waiter gave up: gave_up %d, 503s %d", len(tl.GaveUp), res.Codes["503"])
	}
	// Only the crashes that happened are marked: none answered (its
	// instance exited), none of the armed requests that gave up (503).
	crashes := 0
	for _, f := range tl.Faults {
		if f.Hook {
			continue
		}
		if crashes++; f.Code != 0 && f.Code < 500 || f.Code == http.StatusServiceUnavailable {
			t.Errorf("a crash marked where an armed request was answered %d: %+v", f.Code, f)
		}
	}
	if unanswered := res.Armed["502"] + res.Armed["504"] + res.Armed["error"]; crashes == 0 || crashes > unanswered {
		t.Errorf("%d crashes marked, %d armed requests went unanswered (armed %v)", crashes, unanswered, res.Armed)
	}
	// It stopped early (the lock stuck): it says so, and why.
	if res.Stopped {
		if st := tl.Stopped; st == nil || st.Sent != res.Requests || st.Planned <= st.Sent || !strings.Contains(st.Reason, "no request got through the lock") {
			t.Errorf("a race stopped after %d requests: timeline stopped %+v", res.Requests, tl.Stopped)
		}
	}

	// setnx-expire under crash-before-expire: the holder dies between
	// SETNX and EXPIRE, before its section begins; the stuck lock is the
	// crash's, read back held with no TTL.
	res = postRace(t, lb, "lock=setnx-expire&endpoint=sale&scenario=crash-before-expire")
	if tl = res.Timeline; res.Verdict != bench.VerdictDeadlock || tl == nil || tl.Stuck == nil {
		t.Fatalf("setnx-expire under crash-before-expire: %s, timeline %v: want DEADLOCK with its stuck lock", res.Verdict, tl)
	}
	if s := tl.Stuck; s.Section != -1 || s.Fault < 0 || !s.Read || !s.Held || s.TTLMs != -1 || !strings.HasPrefix(s.Key, "lock:") {
		t.Errorf("setnx-expire's stuck lock: %+v, want the crash's, read back held with no TTL", s)
	}

	res = postRace(t, lb, "lock=del-setnx&endpoint=sale&scenario=crash-wait")
	tl = res.Timeline
	if res.Verdict != bench.VerdictOversold || tl == nil {
		t.Fatalf("del-setnx under crash-wait: %s: want OVERSOLD", res.Verdict)
	}
	if res.Oversold <= 0 || tl.Overlaps == 0 || len(tl.Pairs) == 0 {
		t.Errorf("del-setnx under crash-wait: oversold %d, %d overlaps, %d pairs drawn: want the double grant drawn", res.Oversold, tl.Overlaps, len(tl.Pairs))
	}
	if tl.Interrupted == 0 || !tl.Complete {
		t.Errorf("del-setnx under crash-wait: %d sections cut, complete %v: want the crashed instances' sections kept", tl.Interrupted, tl.Complete)
	}
	if tl.Stuck != nil {
		t.Errorf("an OVERSOLD race with a stuck lock: %+v", tl.Stuck)
	}
}
