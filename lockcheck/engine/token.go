package engine

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A token is a schedule that broke a lock, with what it needs to run
// again on any machine: the clients, the sections each runs, the lease,
// the faults and the bounds of the search that found it. It reads
//
//	lc1:3:1:2000:crash+late:1:2:A.A.A.A.t.B.A.B.C.C.B.C
//
// (version, clients, sections, lease in ms, faults, faults and time
// passings a schedule may have, the steps). A step is a client's letter
// (its next command reaches Redis), w and a letter (its watchdog's
// renewal), t (time passes to the next thing due), or x, p, s, l, c, k
// and a letter (the client crashes, pauses, its clock runs ahead, its
// next command's reply is lost, the context of its Obtain or Release is
// cancelled before its next command is sent, or after it ran).

const tokenVersion = "lc1"

// Token is r's schedule as a token ("" for a result with none).
func (r Result) Token() string {
	if r.Verdict == None || len(r.Schedule) == 0 {
		return ""
	}
	c := r.Config
	steps := make([]string, len(r.Schedule))
	for i, ch := range r.Schedule {
		steps[i] = tokenStep(ch)
	}
	return fmt.Sprintf("%s:%d:%d:%d:%s:%d:%d:%s", tokenVersion, r.Clients, c.Sections, c.TTL.Milliseconds(),
		strings.ReplaceAll(r.Faults.String(), ",", "+"), c.MaxFaults, c.MaxTicks, strings.Join(steps, "."))
}

func tokenStep(ch Choice) string {
	name := string(rune('A' + ch.Client))
	switch ch.Kind {
	case Deliver:
		if ch.Node > 0 {
			return fmt.Sprintf("%s%d", name, ch.Node)
		}
		return name
	case DeliverWD:
		return "w" + name
	case Tick:
		return "t"
	case CrashIt:
		return "x" + name
	case PauseIt:
		return "p" + name
	case LoseIt:
		return "l" + name
	case CancelIt:
		return "c" + name
	case CancelAfterIt:
		return "k" + name
	case SkewIt:
		return "s" + name
	case RestartIt:
		return fmt.Sprintf("r%d", ch.Node)
	}
	return "?"
}

// Schedule is what a token says: the search's configuration, its
// clients and its steps.
type Schedule struct {
	Config  Config
	Clients int
	Steps   []Choice
}

// ParseToken reads a token (Result.Token).
func ParseToken(tok string) (Schedule, error) {
	bad := func(why string) (Schedule, error) {
		return Schedule{}, fmt.Errorf("not a replay token (%s): %q", why, tok)
	}
	parts := strings.Split(strings.TrimSpace(tok), ":")
	if len(parts) != 8 || parts[0] != tokenVersion {
		return bad("want " + tokenVersion + ":clients:sections:lease-ms:faults:max-faults:max-ticks:steps")
	}
	var nums [5]int
	for i, p := range []string{parts[1], parts[2], parts[3], parts[5], parts[6]} {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return bad(fmt.Sprintf("%q is no count", p))
		}
		nums[i] = n
	}
	var s Schedule
	s.Clients = nums[0]
	if s.Clients < 2 || s.Clients > 4 {
		return bad("2 to 4 clients")
	}
	s.Config = Config{MaxClients: s.Clients, Sections: nums[1], TTL: time.Duration(nums[2]) * time.Millisecond, MaxFaults: nums[3], MaxTicks: nums[4]}
	if parts[4] != "none" {
		f, err := ParseFaults(strings.ReplaceAll(parts[4], "+", ","))
		if err != nil {
			return bad(err.Error())
		}
		s.Config.Faults = f
	}
	for _, st := range strings.Split(parts[7], ".") {
		ch, ok := parseStep(st, s.Clients)
		if !ok {
			return bad(fmt.Sprintf("no step %q", st))
		}
		s.Steps = append(s.Steps, ch)
	}
	return s, nil
}

func parseStep(st string, clients int) (Choice, bool) {
	client := func(c byte) (int, bool) {
		i := int(c) - 'A'
		return i, i >= 0 && i < clients
	}
	switch {
	case st == "t":
		return Choice{Kind: Tick}, true
	case len(st) >= 2 && st[0] == 'r':
		n, err := strconv.Atoi(st[1:])
		return Choice{Kind: RestartIt, Client: -1, Node: n}, err == nil && n > 0
	case len(st) == 2 && strings.IndexByte("wxpslck", st[0]) >= 0:
		i, ok := client(st[1])
		kind := map[byte]ChoiceKind{'w': DeliverWD, 'x': CrashIt, 'p': PauseIt, 's': SkewIt, 'l': LoseIt, 'c': CancelIt, 'k': CancelAfterIt}[st[0]]
		return Choice{Kind: kind, Client: i}, ok
	case len(st) >= 1:
		i, ok := client(st[0])
		ch := Choice{Kind: Deliver, Client: i}
		if len(st) > 1 {
			n, err := strconv.Atoi(st[1:])
			ch.Node, ok = n, ok && err == nil && n > 0
		}
		return ch, ok
	}
	return Choice{}, false
}
