package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The lab's rungs name their owners with UUIDs, which the state's key
// and the diagram rename (A1, B1...). A library's lock, or a lock under
// Check, writes random strings of its own (redislock 22 base64 chars,
// redsync 24): left as they are, each run of a schedule would reach a
// state never seen before, and the diagram would show noise. So for such
// a target (Target.Tokens) the world learns them from the commands sent:
// a value a SET writes, or an argument of a script, that looks random (16
// characters or more of base64's alphabet or hex, not all digits) is a
// token, and stands for a UUID of the world's own wherever it appears.

// learn notes the tokens cmds carry.
func (w *world) learn(cmds []redis.Cmder) {
	for _, cmd := range cmds {
		args := cmd.Args()
		var vals []any
		switch strings.ToLower(cmd.Name()) {
		case "set", "getset", "setex", "psetex", "setnx":
			if len(args) > 2 {
				vals = args[2:3]
			}
			if strings.EqualFold(cmd.Name(), "setex") || strings.EqualFold(cmd.Name(), "psetex") {
				vals = args[3:]
			}
		case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall":
			if len(args) > 2 {
				n, _ := strconv.Atoi(argString(args[2]))
				if 3+n <= len(args) {
					vals = args[3+n:]
				}
			}
		}
		for _, v := range vals {
			s := argString(v)
			if _, ok := w.learned[s]; ok || !tokenLike(s) {
				continue
			}
			if w.learned == nil {
				w.learned = map[string]string{}
			}
			w.learned[s] = fmt.Sprintf("00000000-0000-0000-0000-%012x", len(w.learned))
			w.untokens = nil
		}
	}
}

// untoken puts each learned token's UUID in its place in s.
func (w *world) untoken(s string) string {
	if len(w.learned) == 0 {
		return s
	}
	if w.untokens == nil {
		var pairs []string
		for tok, u := range w.learned {
			pairs = append(pairs, tok, u)
		}
		w.untokens = strings.NewReplacer(pairs...)
	}
	return w.untokens.Replace(s)
}

// tokenLike says s looks like a random token.
func tokenLike(s string) bool {
	if len(s) < 16 || len(s) > 64 || isUUID36(s) {
		return false
	}
	digits := 0
	for i := range len(s) {
		c := s[i]
		switch {
		case isDigit(c):
			digits++
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '+', c == '/', c == '=', c == '_', c == '-':
		default:
			return false
		}
	}
	return digits < len(s)
}

func isUUID36(s string) bool { return len(s) == 36 && isUUID(s) }
