package bench

import (
	"time"

	"github.com/lockladder/lockladder/bench/history"
	"github.com/lockladder/lockladder/contract"
)

// Row is the outcome of one run: one lock, one endpoint, one scenario.
type Row struct {
	// Scenario names the conditions of the run (Shape.Scenario): "normal"
	// for a plain benchmark.
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Endpoint string `json:"endpoint"`
	// Wait is the wait= the requests carried ("" for the app's default).
	Wait string `json:"wait,omitempty"`

	// Requests is the number of requests sent and answered (or failed).
	Requests int `json:"requests"`
	// OK counts HTTP 200 answers.
	OK int `json:"ok"`
	// Codes counts every other outcome by status ("409", "503", "502"),
	// and "error" for transport errors (refused, reset, timeout).
	Codes map[string]int `json:"codes"`
	// Instances counts 200 answers per X-Instance header: it shows the
	// load was spread over the instances.
	Instances map[string]int `json:"instances"`
	// MaxWaitMs is, per instance, the longest a request that got the lock
	// waited for it, as the app measured it (contract.HeaderLockWait).
	MaxWaitMs map[string]float64 `json:"max_wait_ms,omitempty"`

	// Initial is the stock the reset answered; Remaining, Sold and Num are
	// read back from GET /stock after the run.
	Initial   int64 `json:"initial"`
	Remaining int64 `json:"remaining"`
	Sold      int64 `json:"sold"`
	Num       int64 `json:"num"`

	// Items are the run's items, each judged on its own, when it was
	// spread over several (Config.SKUs); the counters above are then
	// their totals. Masters counts the 200s per Redis Cluster master of
	// the items (none on one Redis).
	Items   []ItemRow      `json:"items,omitempty"`
	Masters map[string]int `json:"masters,omitempty"`

	// Oversold and LostUpdates are computed by Judge.
	Oversold    int64 `json:"oversold"`
	LostUpdates int64 `json:"lost_updates"`
	// LostAnswers, computed by Judge, counts sales the counters hold whose
	// 200 never reached the client, all within the requests the app never
	// answered (502, 504, transport errors): an instance that crashed after
	// selling.
	LostAnswers int64 `json:"lost_answers,omitempty"`

	// RPS is answered requests per second of the run (ab's "Requests per
	// second"); latencies are per request, in milliseconds.
	RPS        float64 `json:"rps"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	DurationMs float64 `json:"duration_ms"`

	// Armed counts the outcomes of the requests that carried the
	// scenario's fault, as Codes does ("200", "503", "error"): a fault
	// fires only in a request that got the lock, so an armed request that
	// answered 503 armed nothing.
	Armed map[string]int `json:"armed,omitempty"`

	// StallMs is the longest time with no progress: no answer from inside
	// the critical section (a 200, or on /sale a 409, the sold-out answer
	// the sale gives under the lock). It is measured after the first fault
	// of the run (an armed request sent, a hook done), or over the whole run
	// when the scenario arms none, up to its end.
	StallMs float64 `json:"stall_ms"`
	// StallBoundMs is the scenario's stall bound (0: none): a run that
	// stalls longer is stopped early and judged DEADLOCK.
	StallBoundMs float64 `json:"stall_bound_ms,omitempty"`
	// Stopped says the run was stopped before all its requests were sent,
	// because it stalled past the bound: StoppedMs after its start, for
	// StopReason (in words). Planned is how many it was to send.
	Stopped    bool    `json:"stopped,omitempty"`
	StoppedMs  float64 `json:"stopped_ms,omitempty"`
	StopReason string  `json:"stop_reason,omitempty"`
	Planned    int     `json:"planned,omitempty"`

	// Linearizable is the history checker's finding on the run's answers:
	// ok, illegal or unknown (see package history); Evidence says why a
	// history is illegal, and Visualization is the file that shows it.
	Linearizable  string `json:"linearizable"`
	Evidence      string `json:"evidence,omitempty"`
	Visualization string `json:"visualization,omitempty"`
	// PossiblyApplied counts the requests without a definite answer (no
	// answer at all, or Redis failed under them): the checker lets each
	// take effect or not.
	PossiblyApplied int `json:"possibly_applied"`
	// Overlaps counts critical sections that wrote while another holder of
	// the same lock was still inside; Sections is how many sections the
	// instances reported for the run (-1: not asked, -2: some instance did
	// not answer or had forgotten some, so Overlaps is a lower bound).
	Overlaps int `json:"overlaps"`
	Sections int `json:"sections"`

	// Verdict is SAFE, OVERSOLD, LOST UPDATES, OVERLAP, DEADLOCK or
	// UNSERVED (see Judge), or NOT RUN for a lock this stack cannot serve.
	Verdict string `json:"verdict"`
	// NotRun says why the run did not happen: the app lists the lock as
	// unavailable (its server is not installed, say). Such a row has no
	// figures.
	NotRun string `json:"not_run,omitempty"`
	// Expected is the ladder's verdict for the pair, in matrix runs.
	Expected string `json:"expected,omitempty"`

	// Ops are the run's requests as history operations, their times
	// since Began; package suite's faults read their own figures off
	// them. They are not in the reports.
	Ops   []history.Op `json:"-"`
	Began time.Time    `json:"-"`
	// Held are the critical sections of the run's lock the instances
	// reported (those Overlaps counts), the earliest acquired first; the
	// page draws them on a timeline. Faults are the run's faults: each
	// armed request, and each hook fired on the stack. Neither is in the
	// reports.
	Held   []contract.Section `json:"-"`
	Faults []Fault            `json:"-"`
}

// Fault is one fault of a run: an armed request (the scenario's armed
// parameters on it), or a hook fired on the stack.
type Fault struct {
	// About is what it did: the armed request's parameters
	// ("fault=pause&pause=800ms"), or the hook's About.
	About string
	// Hook marks a hook; otherwise an armed request.
	Hook bool
	// Call and Return are nanoseconds since Began: the request sent and
	// answered, or the hook's Do begun and done.
	Call, Return int64
	// Instance is the X-Instance of the armed request's answer ("" when
	// none came: a crash); Code its status (0: no answer).
	Instance string
	Code     int
}
