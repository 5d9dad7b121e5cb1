package embedded

import (
	"reflect"

	mserver "github.com/alicebob/miniredis/v2/server"
)

// The embedded Redis requires the stack's password too (miniredis's
// RequireAuth). miniredis checks it on the commands it runs; the script
// runner (minilua.go) answers EVAL, SCRIPT and CONFIG itself, before
// miniredis sees them, so it checks them here, and its scripts' own
// redis.call peers log in once, as the server's own.

// ownCommands are the commands the script runner answers itself.
var ownCommands = map[string]bool{
	"EVAL": true, "EVALSHA": true, "EVAL_RO": true, "EVALSHA_RO": true, "SCRIPT": true, "CONFIG": true,
}

// refused answers NOAUTH, and returns true, for a command the script
// runner answers itself from a client that has not logged in.
func (s *scripts) refused(c *mserver.Peer, cmd string) bool {
	if s.password == "" || !ownCommands[cmd] || authenticated(c) {
		return false
	}
	c.WriteError("NOAUTH Authentication required.")
	return true
}

// authenticate logs a script's command peer in (it is ours: nested).
func (s *scripts) authenticate(call *scriptCall) {
	if s.password == "" {
		return
	}
	s.srv.Dispatch(call.peer, []string{"AUTH", s.password})
	call.w.Flush()
	call.buf.Reset()
}

// authenticated reports whether miniredis let c in (AUTH): the flag of
// its connection context, which miniredis keeps unexported, read by
// reflection. A miniredis that renamed it lets nobody in: the stack's
// tests say so at once.
func authenticated(c *mserver.Peer) bool {
	if c.Ctx == nil {
		return false
	}
	v := reflect.ValueOf(c.Ctx)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	f := v.Elem().FieldByName("authenticated")
	return f.IsValid() && f.Kind() == reflect.Bool && f.Bool()
}
