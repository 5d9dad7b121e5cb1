// Package history is what a run did, as data, and the checks that judge it
// without trusting the app's own counters alone.
//
// The benchmark records every request it sent as an [Op]: who sent it, when
// it was called and when it returned, which instance answered, and what the
// answer said (the stock left after a sale, num after an increment). [Check]
// asks porcupine whether some order of those operations, each taking effect
// at one instant inside its call, explains every answer: a lock that lets two
// buyers read the same stock produces two sales reporting the same remaining
// stock, which no order explains.
//
// The app records every critical section it held as a [contract.Section]: when the
// lock was acquired and when its release was sent. [Overlaps] counts sections
// of the same lock that wrote while another was held, the lock's own promise
// broken, whether or not the counters show damage this time.
package history

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/lockladder/lockladder/contract"
)

// Outcome is what an answer says happened to the stock or counter.
type Outcome string

const (
	// Applied: a 200; Value is the stock left (/sale) or num (/testLock).
	Applied Outcome = "applied"
	// SoldOut: a 409 sold_out from inside the critical section: the
	// stock was 0.
	SoldOut Outcome = "sold_out"
	// Rejected: nothing was changed, for sure: the lock was not had in
	// time, a stale fencing token was refused, or the request was refused.
	Rejected Outcome = "rejected"
	// Unknown: no answer from the app (a 502 or 504 from the load
	// balancer after the request reached an instance, a transport error),
	// or Redis failed under it: the request may have been applied. It counts as possibly applied with no return
	// time, as etcd's robustness tests do.
	Unknown Outcome = "unknown"
	// Read: not a request of the load but the counters read back after
	// it (GET /stock); Value is the stock left or num. It ends a history,
	// so that effects nobody was told of are checked too.
	Read Outcome = "read"
)

// Op is one request as the client saw it.
type Op struct {
	// Client is the load worker that sent it (see AssignClients).
	Client int `json:"client"`
	// Call and Return are nanoseconds since the run started.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
	// Instance is the X-Instance that answered ("" when none did).
	Instance string `json:"instance,omitempty"`
	// Item is the item the request was for (its sku=; "" for the lab's
	// item). Check takes the operations of one item.
	Item    string  `json:"item,omitempty"`
	Code    int     `json:"code"`
	Outcome Outcome `json:"outcome"`
	// Value is the stock left after an applied sale, or num after an
	// applied increment.
	Value int64 `json:"value,omitempty"`
}

// answer is the part of a /sale or /testLock body that Classify reads.
type answer struct {
	Reason    string `json:"reason"`
	Remaining *int64 `json:"remaining"`
	Num       *int64 `json:"num"`
	// UpstreamBytesSent is the load balancer's account of a 502 or 504:
	// "0" when not a byte of the request reached an instance.
	UpstreamBytesSent string `json:"upstream_bytes_sent"`
}

// Classify reads an answer: its status (0 for a transport error) and body.
// A 200 without the value it should carry is Unknown: it cannot be placed.
func Classify(code int, body []byte) (Outcome, int64) {
	var a answer
	_ = json.Unmarshal(body, &a) // a body that is not JSON says nothing more
	switch {
	case code == http.StatusOK:
		switch {
		case a.Remaining != nil:
			return Applied, *a.Remaining
		case a.Num != nil:
			return Applied, *a.Num
		}
		return Unknown, 0
	case code == http.StatusConflict && a.Reason == contract.ReasonStaleToken:
		return Rejected, 0
	case code == http.StatusConflict && (a.Reason == contract.ReasonSoldOut || a.Reason == ""):
		return SoldOut, 0
	case code == http.StatusConflict:
		// A run guard's refusal (guard_lost, run_in_progress): answered
		// before any lock was taken. Read as sold out, it made a history
		// illegal that was not.
		return Rejected, 0
	case code == http.StatusServiceUnavailable && (a.Reason == contract.ReasonLockTimeout || a.Reason == contract.ReasonLockBusy ||
		a.Reason == contract.ReasonLockUnavailable):
		return Rejected, 0
	case code >= 400 && code < 500:
		return Rejected, 0 // refused before anything was done
	case (code == http.StatusBadGateway || code == http.StatusGatewayTimeout) && a.UpstreamBytesSent == "0":
		return Rejected, 0 // the instance was down: the request never reached it
	}
	return Unknown, 0 // 0, 500, 502, 503 (Redis), 504
}

// AssignClients numbers the workers that sent ops. The load runs as a
// closed loop of C workers, each sending its next request once its last
// returned, but vegeta does not say which worker sent which: this rebuilds
// a numbering with the fewest workers (interval colouring, by call time),
// so that no worker has two requests in flight, as porcupine's visualisation
// expects. ops are sorted by call.
func AssignClients(ops []Op) {
	slices.SortStableFunc(ops, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	var busy busyHeap // workers in flight, by return
	var free []int    // idle worker numbers, a stack
	next := 0
	for i := range ops {
		for len(busy) > 0 && busy[0].ret < ops[i].Call {
			free = append(free, heap.Pop(&busy).(worker).id)
		}
		var id int
		if n := len(free); n > 0 {
			id, free = free[n-1], free[:n-1]
		} else {
			id, next = next, next+1
		}
		ops[i].Client = id
		heap.Push(&busy, worker{id: id, ret: ops[i].Return})
	}
}

type worker struct {
	id  int
	ret int64
}

type busyHeap []worker

func (h busyHeap) Len() int           { return len(h) }
func (h busyHeap) Less(i, j int) bool { return h[i].ret < h[j].ret }
func (h busyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *busyHeap) Push(x any)        { *h = append(*h, x.(worker)) }
func (h *busyHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}
