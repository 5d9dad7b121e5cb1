package race

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/internal/report"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/suite"
)

// MaxSections is the most critical sections a race's timeline carries:
// the latest, when a race held more.
const MaxSections = 20000

// Timeline is what the page draws of a race: who held the lock when, lane
// by lane (one per instance), the sections that overlapped, the stale
// writes a fence refused, and the faults. Times are microseconds since
// Start; a section is [lane, acquired, released, token, flags] (a flat
// array: a race holds thousands).
type Timeline struct {
	Start     int64      `json:"start"` // Unix ns: the load began
	EndUs     int64      `json:"end_us"`
	Instances []string   `json:"instances"` // the lanes
	Sections  [][5]int64 `json:"sections"`  // by acquired
	// Omitted counts earlier sections left out (more than MaxSections).
	Omitted int `json:"omitted"`
	// Complete: every instance answered and forgot none of the race's
	// sections (a crashed instance forgets what it held).
	Complete bool `json:"complete"`
	// Overlaps is the run's count (bench's: every section, kept or not);
	// Pairs are the overlaps among Sections, [i, j]: section i began,
	// and wrote, while section j, which also wrote, was held.
	Overlaps int      `json:"overlaps"`
	Pairs    [][2]int `json:"pairs"`
	// Refused counts the sections whose write a fence refused.
	Refused int `json:"refused"`
	// LeaseMs is the lease every section was granted, when the race set
	// it (lease=); 0: the instances' own, not known here, or none. Lease
	// says which, in words true of the rung: "no lease" for setnx.
	LeaseMs float64 `json:"lease_ms,omitempty"`
	Lease   string  `json:"lease"`
	Faults  []Fault `json:"faults"`
	// Verdict is the race's: the page colours what it draws by it.
	Verdict string `json:"verdict,omitempty"`
	// Interrupted counts the sections an instance died inside (a crash):
	// each begun and never ended, drawn to the instance's restart.
	Interrupted int `json:"interrupted,omitempty"`
	// Stuck is the lock a DEADLOCK left held: nil when none.
	Stuck *Stuck `json:"stuck,omitempty"`
	// Stopped says the race stopped early, when it did: when, after how
	// many of the requests planned, and why.
	Stopped *Stopped `json:"stopped,omitempty"`
	// GaveUp are the requests that waited for the lock and gave up (a
	// 503: lock not had in time), [lane, called, answered] (lane -1: no
	// instance named), the latest MaxGaveUp of them.
	GaveUp [][3]int64 `json:"gave_up"`
}

// MaxGaveUp is the most waiters that gave up a timeline carries.
const MaxGaveUp = 2000

// Stopped is a race stopped before it sent all its requests.
type Stopped struct {
	AtUs    int64  `json:"at_us"`
	Sent    int    `json:"sent"`
	Planned int    `json:"planned"`
	Reason  string `json:"reason"`
}

// Stuck is the lock a DEADLOCK left held: the crashed holder's, from its
// acquisition (the section it died inside) to the end of the race; or,
// when its holder died before its section began (between SETNX and
// EXPIRE), from the crash of the armed request that took it (Section -1,
// Fault that request's index in Faults, Lane -1 when no instance
// answered it).
type Stuck struct {
	Lane    int    `json:"lane"`
	Section int    `json:"section"` // the interrupted section; -1: none
	Fault   int    `json:"fault"`   // the crash that left it, when no section did; else -1
	FromUs  int64  `json:"from_us"`
	Key     string `json:"key"`
	// Read says the key was read back from Redis at the end of the race
	// (GET /lock); then Held says it was still there and TTLMs what was
	// left of its lease (-1: none, held for good).
	Read  bool  `json:"read"`
	Held  bool  `json:"held"`
	TTLMs int64 `json:"ttl_ms"`
}

// Section flags, the fifth field of a timeline section.
const (
	// FlagWrote: the business wrote.
	FlagWrote = 1 << iota
	// FlagRefused: a fence refused the section's read or write as stale
	// (the instance records it: contract.Section.Refused).
	FlagRefused
	// FlagOverlap: one of a pair in Pairs.
	FlagOverlap
	// FlagInterrupted: the instance died inside the section
	// (contract.Section.Interrupted); it ends when the instance restarted.
	FlagInterrupted
)

// Fault is a fault on the timeline: an armed request, or a hook on the
// stack.
type Fault struct {
	About   string `json:"about"`
	Hook    bool   `json:"hook,omitempty"`
	AtUs    int64  `json:"at_us"`
	UntilUs int64  `json:"until_us"`
	// Lane is the instance that answered the armed request (-1: none
	// did, it crashed; or a hook); Section the section it held there, the
	// one the fault struck (-1: not known).
	Lane    int `json:"lane"`
	Section int `json:"section"`
	Code    int `json:"code"`
}

// TimelineOf is the timeline of row, a run of the matrix (the demo's
// ladder), its lease the one the scenario started the instances with
// (-lock-ttl), for a rung that takes a lease.
func TimelineOf(row bench.Row) *Timeline {
	return newTimeline(row, scenarioLease(row.Scenario, row.Lock))
}

// leaseText says the lease the sections of a race of lockName had:
// lease when the race set it, else the rung's own, or none.
func leaseText(lockName string, lease time.Duration) string {
	info, ok := rungInfo(lockName)
	switch {
	case ok && (info.Atomic || lockName == "none"):
		return "no lock"
	case ok && !info.Lease && ownLease[lockName] != "":
		return ownLease[lockName]
	case ok && !info.Lease:
		return "no lease: the lock is held until its holder lets it go"
	case lease > 0:
		return fmt.Sprintf("lease %d ms", lease.Milliseconds())
	}
	return "lease: the instances' own (-lock-ttl)"
}

// ownLease says the lease of a rung that takes none from the race (no
// Call.Lease) yet whose lock lapses on its own.
var ownLease = map[string]string{
	"zookeeper":   "lease: the ZooKeeper session's timeout",
	"zk-lock":     "lease: the ZooKeeper session's timeout",
	"etcd":        "lease: an etcd lease, kept alive while the instance runs",
	"etcd-mutex":  "lease: the session's etcd lease, kept alive while the instance runs",
	"rueidislock": "lease: rueidislock's own key validity, extended every half of it",
}

// scenarioLease is the lease the matrix's instances grant lock under
// scenario: its -lock-ttl, for a rung with a lease (0: none, or the
// instances' own).
func scenarioLease(scenario, lockName string) time.Duration {
	sc, err := suite.LookupScenario(scenario)
	if err != nil {
		return 0
	}
	rungs := suite.Rungs()
	if i := slices.IndexFunc(rungs, func(r lock.Info) bool { return r.Name == lockName }); i < 0 || !rungs[i].Lease {
		return 0
	}
	return ttlOf(sc)
}

// ttlOf is the lease sc starts the instances with (its -lock-ttl; 0:
// none set).
func ttlOf(sc suite.Scenario) time.Duration {
	for i, a := range sc.AppArgs {
		if a == "-lock-ttl" && i+1 < len(sc.AppArgs) {
			d, _ := time.ParseDuration(sc.AppArgs[i+1])
			return d
		}
	}
	return 0
}

// ReportTimelines is the timelines an HTML report draws of rows (the
// demo's ladder of flaws), in their order: each run that oversold, lost
// updates or saw two holders write at once, and each a fence kept safe
// by refusing a stale write, and each DEADLOCK whose dead holder's lock
// is drawn (Stuck); "" when none did, or none has its sections.
func ReportTimelines(rows []bench.Row) template.HTML {
	var views []report.TimelineView
	for _, r := range rows {
		if r.Sections == -1 || r.NotRun != "" {
			continue // no sections asked
		}
		t := TimelineOf(r)
		failed := r.Verdict == bench.VerdictOversold || r.Verdict == bench.VerdictLostUpdates || r.Verdict == bench.VerdictOverlap
		if !failed && t.Refused == 0 && t.Stuck == nil {
			continue
		}
		v := report.TimelineView{Scenario: r.Scenario, Lock: r.Lock, Verdict: r.Verdict, Color: bench.VerdictColor(r.Verdict), Timeline: t}
		if r.Expected != "" {
			v.Mark = "✓ as the ladder says"
			if r.Verdict != r.Expected {
				v.Mark = bench.MarkUnexpected + " the ladder says " + r.Expected
			}
		}
		if r.Endpoint != "" && r.Endpoint != bench.EndpointSale {
			v.Lock += " /" + r.Endpoint
		}
		var what []string
		if sc, err := suite.LookupScenario(r.Scenario); err == nil {
			what = append(what, sc.About)
		}
		switch {
		case r.Verdict == bench.VerdictOversold:
			what = append(what, fmt.Sprintf("%d sold beyond the stock", r.Oversold))
		case r.Verdict == bench.VerdictLostUpdates:
			what = append(what, fmt.Sprintf("%d updates lost", r.LostUpdates))
		}
		switch {
		case t.Stuck != nil:
			what = append(what, t.Stuck.told(t))
		case len(t.Sections) == 0:
			what = append(what, "no critical section was read back")
		case t.Overlaps > 0:
			what = append(what, fmt.Sprintf("%d critical section%s wrote while another holder also wrote", t.Overlaps, plural(t.Overlaps)))
		case failed && !t.Complete:
			what = append(what, "no two sections read back overlapped; an instance did not answer, or forgot some")
		case failed:
			what = append(what, "no two sections read back overlapped: the damage came from outside them")
		}
		if t.Stopped != nil {
			what = append(what, t.Stopped.told())
		}
		if t.Refused > 0 {
			what = append(what, fmt.Sprintf("the fence refused %d stale write%s", t.Refused, plural(t.Refused)))
		}
		v.Note = strings.Join(what, "; ")
		views = append(views, v)
	}
	if len(views) == 0 {
		return ""
	}
	return report.TimelinesHTML(views)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// newTimeline lays out row's sections and faults; lease is the lease the
// race set (0: none).
func newTimeline(row bench.Row, lease time.Duration) *Timeline {
	start := row.Began.UnixNano()
	held := row.Held
	t := &Timeline{Start: start, Complete: row.Sections >= 0, Overlaps: max(row.Overlaps, 0),
		Instances: []string{}, Sections: [][5]int64{}, Pairs: [][2]int{}, Faults: []Fault{}, GaveUp: [][3]int64{},
		LeaseMs: float64(lease) / float64(time.Millisecond), Lease: leaseText(row.Lock, lease), Verdict: row.Verdict}
	held = slices.Clone(held)
	slices.SortStableFunc(held, func(a, b contract.Section) int { return cmp.Compare(a.Acquired, b.Acquired) })
	if len(held) > MaxSections {
		t.Omitted = len(held) - MaxSections
		held = held[t.Omitted:]
	}

	lane := map[string]int{}
	for _, s := range held {
		lane[s.Instance] = 0
	}
	for _, f := range row.Faults {
		if f.Instance != "" {
			lane[f.Instance] = 0
		}
	}
	for _, op := range row.Ops {
		if op.Code == http.StatusServiceUnavailable && op.Instance != "" {
			lane[op.Instance] = 0 // an instance whose requests all gave up
		}
	}
	for name := range lane {
		t.Instances = append(t.Instances, name)
	}
	slices.Sort(t.Instances)
	for i, name := range t.Instances {
		lane[name] = i
	}

	us := func(unixNs int64) int64 { return (unixNs - start) / int64(time.Microsecond) }
	for _, s := range held {
		var flags int64
		if s.Wrote {
			flags |= FlagWrote
		}
		if s.Refused {
			flags |= FlagRefused
			t.Refused++
		}
		if s.Interrupted {
			flags |= FlagInterrupted
			t.Interrupted++
		}
		t.Sections = append(t.Sections, [5]int64{int64(lane[s.Instance]), us(s.Acquired), us(s.Released), s.Token, flags})
		t.EndUs = max(t.EndUs, us(s.Released))
	}
	t.Pairs = overlapPairs(held)
	for _, p := range t.Pairs {
		t.Sections[p[0]][4] |= FlagOverlap
		t.Sections[p[1]][4] |= FlagOverlap
	}

	for _, f := range row.Faults {
		if !struckAt(f) {
			continue // armed, and never struck: drawn as a waiter that gave up, if it did
		}
		tf := Fault{About: f.About, Hook: f.Hook, AtUs: f.Call / int64(time.Microsecond), UntilUs: f.Return / int64(time.Microsecond),
			Lane: -1, Section: -1, Code: f.Code}
		if l, ok := lane[f.Instance]; ok && f.Instance != "" {
			tf.Lane = l
			// A 503 never held the lock: the sections in its window
			// are other requests'.
			if f.Code != http.StatusServiceUnavailable {
				tf.Section = struck(t.Sections, l, tf.AtUs, tf.UntilUs)
			}
		}
		t.Faults = append(t.Faults, tf)
		t.EndUs = max(t.EndUs, tf.UntilUs)
	}
	for _, op := range row.Ops {
		if op.Code == http.StatusServiceUnavailable {
			l, ok := lane[op.Instance]
			if !ok {
				l = -1
			}
			t.GaveUp = append(t.GaveUp, [3]int64{int64(l), op.Call / int64(time.Microsecond), op.Return / int64(time.Microsecond)})
			t.EndUs = max(t.EndUs, op.Return/int64(time.Microsecond))
		}
	}
	slices.SortFunc(t.GaveUp, func(a, b [3]int64) int { return cmp.Compare(a[2], b[2]) })
	if len(t.GaveUp) > MaxGaveUp {
		t.GaveUp = t.GaveUp[len(t.GaveUp)-MaxGaveUp:]
	}
	if row.Verdict == bench.VerdictDeadlock {
		t.Stuck = stuck(t, held)
	}
	if row.Stopped {
		at := int64(row.StoppedMs * 1000)
		t.Stopped = &Stopped{AtUs: at, Sent: row.Requests, Planned: row.Planned, Reason: row.StopReason}
		t.EndUs = max(t.EndUs, at)
	}
	return t
}

// told says who left the stuck lock, and when.
func (st *Stuck) told(t *Timeline) string {
	who := "an instance"
	if st.Lane >= 0 && st.Lane < len(t.Instances) {
		who = t.Instances[st.Lane]
	}
	if st.Section < 0 {
		return fmt.Sprintf("%s crashed at %.1f ms having taken the lock, before its section began (its request got no answer): nobody could take the lock to the end of the run", who, float64(st.FromUs)/1000)
	}
	return fmt.Sprintf("%s died holding the lock at %.1f ms: nobody could take it to the end of the run", who, float64(st.FromUs)/1000)
}

// told says that the race stopped early, and why.
func (s *Stopped) told() string {
	out := fmt.Sprintf("stopped early at %.1f ms, after %d of the %d requests planned", float64(s.AtUs)/1000, s.Sent, s.Planned)
	if s.Reason != "" {
		out += ": " + s.Reason
	}
	return out
}

// struckAt says whether an armed request's fault struck: it fires only
// once its request holds the lock, so an armed request that gave up
// (503) armed nothing; a crash answers nothing (its instance exited), so
// a crash's request that was answered did not crash. A hook always ran.
func struckAt(f bench.Fault) bool {
	if f.Hook {
		return true
	}
	if f.Code == http.StatusServiceUnavailable {
		return false
	}
	q, _ := url.ParseQuery(f.About)
	if strings.HasPrefix(q.Get("fault"), "crash") {
		return f.Code == 0 || f.Code >= 500
	}
	return true
}

// stuck is the lock a DEADLOCK's crashed holder left: the latest section
// an instance died inside; else, when the holder died before its section
// began (between SETNX and EXPIRE), the first crash of an armed request,
// from when it was cut (nil: neither).
func stuck(t *Timeline, held []contract.Section) *Stuck {
	for i := len(t.Sections) - 1; i >= 0; i-- {
		if s := t.Sections[i]; s[4]&FlagInterrupted != 0 {
			return &Stuck{Lane: int(s[0]), Section: i, Fault: -1, FromUs: s[1], Key: held[i].Key}
		}
	}
	for i, f := range t.Faults {
		q, _ := url.ParseQuery(f.About)
		if f.Hook || !strings.HasPrefix(q.Get("fault"), "crash") {
			continue
		}
		st := &Stuck{Lane: f.Lane, Section: -1, Fault: i, FromUs: f.UntilUs}
		if len(held) > 0 {
			st.Key = held[len(held)-1].Key // the race's one lock
		}
		return st
	}
	return nil
}

// overlapPairs finds, among secs (sorted by acquired), each section that
// wrote and began while another of the same key that wrote was held: the
// sections history.Overlaps counts, each paired with the holder it
// overlapped (the one held latest).
func overlapPairs(secs []contract.Section) [][2]int {
	type holder struct {
		released int64
		i        int
	}
	held := map[string]holder{} // by key: the latest release so far
	pairs := [][2]int{}
	for i, s := range secs {
		if !s.Wrote {
			continue
		}
		h, ok := held[s.Key]
		if ok && s.Acquired < h.released {
			pairs = append(pairs, [2]int{i, h.i})
		}
		if !ok || s.Released > h.released {
			held[s.Key] = holder{s.Released, i}
		}
	}
	return pairs
}

// struck is the section of lane the armed request [at, until] held: the
// longest within it (-1: none).
func struck(secs [][5]int64, lane int, at, until int64) int {
	best, longest := -1, int64(-1)
	for i, s := range secs {
		if int(s[0]) == lane && s[1] >= at && s[2] <= until && s[2]-s[1] > longest {
			best, longest = i, s[2]-s[1]
		}
	}
	return best
}

// readStuck reads the stuck lock back from Redis (GET /lock through the
// load balancer, with the race's token: its lock is in its scope): still
// held, and with what TTL. A lock the instances
// cannot read (another key, another server) stays not read.
func (s *Service) readStuck(ctx context.Context, st *Stuck, endpoint, token string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.LB+"/lock?endpoint="+url.QueryEscape(endpoint), nil)
	if err != nil {
		return
	}
	if token != "" {
		req.Header.Set(guard.Header, token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var got contract.LockState
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&got) != nil || st.Key != "" && got.Key != st.Key {
		return
	}
	st.Key = got.Key
	st.Read, st.Held, st.TTLMs = true, got.Held, got.TTLMs
}
