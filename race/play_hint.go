package race

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/suite"
)

// The game's hints: the explorer's shortest schedule for a level, searched
// once in the background, told a move at a time in the words of the
// move's button; and what is true of the level's lock (its lease).

// hint says the next move of the explorer's shortest schedule when the
// game's moves so far are its first moves, with its button's words and
// why (or why there is none). The schedule is searched once per rung and
// clients, in the background (searchFor): a hint waits for it at most
// hintWait, then says that the explorer is searching, and for how long
// at most (HintWaitMS): the page asks again then.
func (p *Player) hint(ctx context.Context, t explore.Target, req PlayRequest, res *PlayResult) {
	s := p.searchFor(t, req.Clients, req.lease(), req.Hint)
	if s == nil {
		return // the length is told when known; a search only when asked
	}
	if req.Hint {
		select {
		case <-s.done:
		case <-ctx.Done():
			return
		case <-time.After(hintWait):
		}
	}
	select {
	case <-s.done:
	default:
		if req.Hint {
			left := max(time.Until(s.began.Add(s.budget)), 0) + time.Second
			res.HintWaitMS = left.Milliseconds()
			res.HintNote = fmt.Sprintf("The explorer is searching for the shortest way to break %s; this takes at most %d s more. Ask again then.", t.Name, int(left.Round(time.Second)/time.Second))
		}
		return
	}
	r := s.res
	if r.Verdict == explore.None {
		if req.Hint {
			res.HintNote = noBreak(t.Name, r)
		}
		return
	}
	res.Shortest = r.Steps
	if !req.Hint || res.Verdict != "" {
		return
	}
	for i, ch := range r.Schedule {
		m := explore.FormatMove(ch)
		if i == len(req.Moves) {
			res.Hint = m
			for _, o := range res.Next {
				if o.Move == m {
					res.HintLabel = o.Label
				}
			}
			res.HintWhy = hintWhy(ch, i, r, res.Game)
			res.HintText = fmt.Sprintf("Hint: press \u201c%s\u201d. %s", res.HintLabel, res.HintWhy)
			return
		}
		if req.Moves[i] != m {
			res.HintNote = fmt.Sprintf("Your move %d left the shortest way to break %s the explorer knows (%d moves): undo back to %d moves to follow it.", i+1, t.Name, r.Steps, i)
			return
		}
	}
	res.HintNote = fmt.Sprintf("You have played more moves than the shortest way to break %s the explorer knows (%d moves): keep going, or start again.", t.Name, r.Steps)
}

// truth puts in res what is true of t's lock as the lab runs it: no
// lease for a rung without one (setnx holds its key until a DEL), and
// the lease in words.
func (p *Player) truth(t explore.Target, res *PlayResult) {
	info, ok := rungInfo(t.Name)
	switch {
	case ok && info.Atomic:
		res.LeaseMS, res.Lease = 0, "no lock at all: the sale is one script, atomic in Redis"
	case ok && !info.Lease:
		res.LeaseMS, res.Lease = 0, "no lease: the lock key stays until its holder deletes it"
	default:
		res.Lease = fmt.Sprintf("a lease of %d ms: once its TTL is set, the lock key expires after %d ms unless its holder renews it", res.LeaseMS, res.LeaseMS)
	}
}

// rungInfo is the ladder's description of the rung called name.
func rungInfo(name string) (lock.Info, bool) {
	rungs := suite.Rungs()
	i := slices.IndexFunc(rungs, func(r lock.Info) bool { return r.Name == name })
	if i < 0 {
		return lock.Info{}, false
	}
	return rungs[i], true
}

// hintWait is how long a hint waits for its search before it says the
// explorer is searching: the page answers within a second either way.
const hintWait = 800 * time.Millisecond

// hintSafeBudget bounds the search a hint starts on a level that should
// hold: it finds nothing, and each second of it keeps the game's moves
// waiting.
const hintSafeBudget = 5 * time.Second

// hintSearch is the explorer's search for a level's shortest breaking
// schedule, run once in the background.
type hintSearch struct {
	began  time.Time
	budget time.Duration
	cancel context.CancelFunc
	done   chan struct{} // closed once res is set
	res    explore.Result
}

// searchFor is the search for t with clients clients on a lease of
// lease (0: the explorer's own): begun before, or begun now when start
// (nil when not begun and not start).
func (p *Player) searchFor(t explore.Target, clients int, lease time.Duration, start bool) *hintSearch {
	key := t.Name + "/" + strconv.Itoa(clients) + "/" + lease.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.searches[key]; ok || !start || p.closed {
		return s
	}
	budget := ExploreBudget
	if safeLevel(t.Name) {
		budget = hintSafeBudget
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	s := &hintSearch{began: time.Now(), budget: budget, cancel: cancel, done: make(chan struct{})}
	if p.searches == nil {
		p.searches = map[string]*hintSearch{}
	}
	p.searches[key] = s
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		defer cancel()
		defer close(s.done)
		ex, err := explore.New(t, explore.Config{MaxClients: clients, Budget: budget, TTL: lease})
		if err != nil {
			s.res = explore.Result{Target: t.Name, Verdict: explore.None}
			return
		}
		s.res = ex.Run(ctx)
		ex.Close()
	}()
	return s
}

// searching is how long the searches under way may still take: a move
// waits that long for its turn, beside turnWait.
func (p *Player) searching() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var left time.Duration
	for _, s := range p.searches {
		select {
		case <-s.done:
		default:
			left = max(left, time.Until(s.began.Add(s.budget)))
		}
	}
	return left
}

// safeLevel says a level is one that should hold (path's safe).
func safeLevel(name string) bool {
	for _, l := range path {
		if l.lock == name {
			return l.safe
		}
	}
	return false
}

// noBreak says, in words, what a search that found nothing covered.
func noBreak(name string, r explore.Result) string {
	clients := 2
	if n := len(r.Covers); n > 0 {
		clients = r.Covers[n-1].Clients
	}
	return fmt.Sprintf("No hint: %s should hold. In %.0f s the explorer tried %d different orders of %d clients' commands (%s) and none broke it.",
		name, r.Elapsed.Seconds(), r.Schedules, clients, explore.FaultWords(r.Faults))
}

// hintWhy says in one sentence why move i of r's schedule, ch, leads to
// the break, from what it did there (the step's note in r's trace) and
// from the game now.
func hintWhy(ch explore.Choice, i int, r explore.Result, g explore.Game) string {
	name := string(rune('A' + ch.Client))
	step := fmt.Sprintf("(move %d of the %d that break it)", i+1, r.Steps)
	last := i+1 == r.Steps
	note, event := "", ""
	for _, s := range r.Trace {
		if s.N == i+1 && s.Client == ch.Client {
			note, event = s.Note, s.Event
		}
	}
	holder := func() string {
		if len(g.Holders) > 0 {
			return strings.Join(g.Holders, " and ")
		}
		return "its holder"
	}
	switch ch.Kind {
	case explore.Tick:
		if len(g.Holders) > 0 {
			return fmt.Sprintf("Time passes until %s's lease runs out while %s still holds the lock, so the lock is free for another %s.", holder(), holder(), step)
		}
		return fmt.Sprintf("Time passes until the next thing falls due: a dead client's lease runs out, or a waiting client tries again %s.", step)
	case explore.CrashIt:
		if strings.Contains(g.LockNow, "no TTL") {
			return fmt.Sprintf("%s dies while the lock key has no TTL: nobody will ever delete it %s.", name, step)
		}
		return fmt.Sprintf("%s dies and never releases what it took: only a lease could free the lock %s.", name, step)
	case explore.PauseIt:
		return fmt.Sprintf("%s freezes (a long garbage-collection pause, say) for longer than its lease while it holds the lock: the lock lapses and another client can take it while %s still thinks it holds it %s.", name, name, step)
	case explore.SkewIt:
		return fmt.Sprintf("%s's clock runs ahead: it will see a live lock as expired %s.", name, step)
	case explore.LoseIt:
		return fmt.Sprintf("%s's command runs on Redis but its reply is lost: %s sees a timeout and goes on as its code says %s.", name, name, step)
	case explore.CancelIt:
		return fmt.Sprintf("%s's request gives up: the context of its Obtain or Release is cancelled, so its next command is never sent and the lock's code gets the context's error %s.", name, step)
	case explore.CancelAfterIt:
		return fmt.Sprintf("%s's command runs on Redis, then its request gives up before the reply: the lock's code gets context.Canceled for a command that did run %s.", name, step)
	case explore.RestartIt:
		return fmt.Sprintf("The master restarts empty and forgets the lock it granted: another client can win a majority %s.", step)
	case explore.DeliverWD:
		return fmt.Sprintf("%s's watchdog renews its lease %s.", name, step)
	}
	switch {
	case strings.Contains(note, "holds it too"):
		other := "another client"
		if _, rest, ok := strings.Cut(note, "while "); ok {
			other, _, _ = strings.Cut(rest, " holds it too")
		}
		return fmt.Sprintf("%s takes the lock while %s still thinks it holds it: two holders at once %s.", name, other, step)
	case strings.Contains(note, "'s lock"):
		return fmt.Sprintf("%s deletes the lock another client holds now, so a third can take it %s.", name, step)
	case last && strings.Contains(note, "sold one"):
		return fmt.Sprintf("%s writes the stock it read before the other holder's sale: one of the two sales is lost, and the item is sold twice.", name)
	case strings.Contains(note, "holds the lock"):
		return fmt.Sprintf("%s takes the lock %s.", name, step)
	case strings.Contains(note, "sold one"):
		return fmt.Sprintf("%s sells: it writes the stock %s.", name, step)
	case strings.Contains(note, "released"):
		return fmt.Sprintf("%s releases the lock %s.", name, step)
	case strings.HasPrefix(event, "m") && strings.Contains(event, ": SET lock"):
		return fmt.Sprintf("%s asks a master for the lock: it holds the lock once a majority of the masters grant it %s.", name, step)
	case strings.HasPrefix(event, "SET lock"):
		return fmt.Sprintf("%s sets the lock key, but its take of the lock is not finished: a command is still to come %s.", name, step)
	case strings.HasPrefix(event, "GET stock"):
		return fmt.Sprintf("%s reads the stock: its sale will write back what it read, minus one %s.", name, step)
	case strings.HasPrefix(event, "GET lock"):
		return fmt.Sprintf("%s reads the lock to decide what to do with it %s.", name, step)
	}
	return fmt.Sprintf("%s takes its next step: the shortest way to break the lock goes through it %s.", name, step)
}
