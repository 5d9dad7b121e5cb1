package embedded

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	mserver "github.com/alicebob/miniredis/v2/server"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// scripts runs EVAL, EVALSHA and SCRIPT for an embedded miniredis on Lua
// states it keeps and reuses.
//
// Why: miniredis builds a fresh Lua interpreter for every script (a new
// state, seven standard libraries, cjson, its redis module: about 0.2ms
// and 150 KB of garbage), under its global lock. The lab's locks run a
// script or two per request, so at 100 concurrent requests the embedded
// Redis spent most of its time, and the process most of its garbage
// collection, building interpreters: every rung whose acquire, read or
// write is a script crawled there (reentrant answered 1956 of 5000 with
// 503s at 30 req/s). Here a script costs what its commands cost.
//
// How: miniredis lets a hook see every command before it runs. The hook
// runs scripts itself and passes every other command on, holding a
// read-write lock: a script holds it exclusively while its commands run,
// one at a time, through miniredis's own handlers (each of which takes
// miniredis's lock as a client command would), so no client command can
// run in the middle of a script, as in Redis; client commands share it.
// A command that blocks the connection (BLPOP and friends) would hold it
// while it waits; the lab sends none.
//
// The Lua environment is Redis's where the lab's scripts need it:
// KEYS, ARGV, redis.call and redis.pcall (replies converted as Redis
// does: integer to number, bulk to string, nil to false, array to table,
// status to {ok=...}, error to an error raised or {err=...}),
// redis.status_reply, redis.error_reply, redis.sha1hex and redis.log; the
// base, table, string and math libraries. Return values are converted
// back as Redis does. There is no cjson, cmsgpack or bit.
//
// Any client may send a script, so it runs sandboxed as in Redis
// (sandbox, below): no file or OS access, at most scriptTimeout and
// about scriptMemory (minilua_memory.go), and
// nothing it changes in the state outlives it. Scripts never reach
// miniredis's own script engine, which has none of that: the hook
// answers every EVAL, and a script's redis.call of EVAL is refused.
type scripts struct {
	srv *mserver.Server

	rw sync.RWMutex // a script holds it exclusively; client commands share it

	mu     sync.Mutex
	protos map[string]*lua.FunctionProto // by SHA1 of the source
	nested map[*mserver.Peer]struct{}    // our own command peers: not hooked
	// scriptPeers are the peers scripts send their commands on (nested too).
	scriptPeers map[*mserver.Peer]struct{}
	multi       map[*mserver.Peer]bool // client peers inside MULTI
	states      sync.Pool              // *scriptState

	events *keyspace // the deletions it announces (minievents.go)

	password string // the server's (miniauth.go): "" for none
}

// scriptState is one Lua state and the script call it serves.
type scriptState struct {
	l    *lua.LState
	call *scriptCall
	// pristine is the state's tables as newState left them: restore puts
	// them back after every script.
	pristine []tableCopy
}

// scriptTimeout is how long a script may run: then it stops with an
// error. Redis's lua-time-limit is 5s too, after which it answers BUSY
// to other clients and lets SCRIPT KILL stop the script; here every
// other client waits for the script (it holds rw), so the limit ends it.
// Whatever it wrote before stays written.
var scriptTimeout = 5 * time.Second

// errScriptTimeout is the reply to a script stopped by scriptTimeout.
const errScriptTimeout = "ERR Script killed: it ran longer than %s, the embedded Redis's limit for a script (Redis's busy script)"

// notFromScript are the commands a script may not send (Redis refuses
// them too): a script's EVAL would run on miniredis's own engine, which
// has no sandbox.
var notFromScript = map[string]bool{
	"EVAL": true, "EVALSHA": true, "EVAL_RO": true, "EVALSHA_RO": true, "SCRIPT": true,
	"MULTI": true, "EXEC": true, "DISCARD": true, "WATCH": true, "UNWATCH": true,
	"FUNCTION": true, "FCALL": true, "FCALL_RO": true,
}

// scriptCall is one EVAL: the peer and buffer its redis.call commands use.
type scriptCall struct {
	peer *mserver.Peer
	buf  bytes.Buffer
	w    *bufio.Writer
}

// installScripts puts the script runner in front of m's server. Call it
// again after every (re)start: a restarted miniredis has a new server.
func installScripts(m *miniredis.Miniredis, password string) {
	s := &scripts{
		password:    password,
		srv:         m.Server(),
		protos:      make(map[string]*lua.FunctionProto),
		nested:      make(map[*mserver.Peer]struct{}),
		scriptPeers: make(map[*mserver.Peer]struct{}),
		multi:       make(map[*mserver.Peer]bool),
		events:      &keyspace{m: m, flags: KeyspaceEvents},
	}
	s.states.New = func() any { return s.newState() }
	s.srv.SetPreHook(s.hook)
}

// hook runs before miniredis handles any command. It returns true when it
// has answered the command itself.
func (s *scripts) hook(c *mserver.Peer, cmd string, args ...string) bool {
	s.mu.Lock()
	_, ours := s.nested[c]
	_, script := s.scriptPeers[c]
	inMulti := s.multi[c]
	switch cmd {
	case "MULTI":
		s.multi[c] = true
	case "EXEC", "DISCARD":
		delete(s.multi, c)
	}
	s.mu.Unlock()
	if ours {
		// A script's own command, or one we pass on: miniredis runs it.
		// A script's DEL is announced here, before it runs: whoever it
		// wakes waits for the script (rw) anyway.
		if script {
			if notFromScript[cmd] {
				c.WriteError("ERR This Redis command is not allowed from script")
				return true
			}
			s.events.deleted(cmd, args)
		}
		return false
	}
	if s.refused(c, cmd) {
		return true
	}
	switch cmd {
	case "CONFIG":
		return s.events.config(c, args)
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO":
		if inMulti {
			c.WriteError("ERR the embedded Redis runs no script inside MULTI")
			return true
		}
		s.eval(c, cmd, args)
		return true
	case "SCRIPT":
		return s.script(c, args)
	}
	// Any other command runs as usual, but never inside a script.
	s.rw.RLock()
	defer s.rw.RUnlock()
	s.pass(c, cmd, args)
	s.events.deleted(cmd, args)
	return true
}

// pass runs a client's command through miniredis, past this hook.
func (s *scripts) pass(c *mserver.Peer, cmd string, args []string) {
	s.mu.Lock()
	s.nested[c] = struct{}{}
	s.mu.Unlock()
	s.srv.Dispatch(c, append([]string{cmd}, args...))
	s.mu.Lock()
	delete(s.nested, c)
	s.mu.Unlock()
}

func (s *scripts) script(c *mserver.Peer, args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch strings.ToUpper(args[0]) {
	case "LOAD":
		if len(args) != 2 {
			c.WriteError("ERR wrong number of arguments for 'script|load' command")
			return true
		}
		sha, err := s.load(args[1])
		if err != nil {
			c.WriteError(err.Error())
			return true
		}
		c.WriteBulk(sha)
	case "EXISTS":
		s.mu.Lock()
		c.WriteLen(len(args) - 1)
		for _, sha := range args[1:] {
			n := 0
			if _, ok := s.protos[strings.ToLower(sha)]; ok {
				n = 1
			}
			c.WriteInt(n)
		}
		s.mu.Unlock()
	case "FLUSH":
		s.mu.Lock()
		clear(s.protos)
		s.mu.Unlock()
		c.WriteOK()
	default:
		return false
	}
	return true
}

// load compiles src and keeps it under its SHA1.
func (s *scripts) load(src string) (string, error) {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	s.mu.Lock()
	_, ok := s.protos[sha]
	s.mu.Unlock()
	if ok {
		return sha, nil
	}
	chunk, err := parse.Parse(strings.NewReader(src), "@user_script")
	if err != nil {
		return "", fmt.Errorf("ERR Error compiling script (new function): %v", err)
	}
	proto, err := lua.Compile(chunk, "@user_script")
	if err != nil {
		return "", fmt.Errorf("ERR Error compiling script (new function): %v", err)
	}
	if err := checkConcat(proto); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.protos[sha] = proto
	s.mu.Unlock()
	return sha, nil
}

// eval runs EVAL script numkeys keys... args... (or EVALSHA sha ...).
func (s *scripts) eval(c *mserver.Peer, cmd string, args []string) {
	if len(args) < 2 {
		c.WriteError(fmt.Sprintf("ERR wrong number of arguments for '%s' command", strings.ToLower(cmd)))
		return
	}
	var sha string
	if strings.HasPrefix(cmd, "EVALSHA") {
		sha = strings.ToLower(args[0])
	} else {
		var err error
		if sha, err = s.load(args[0]); err != nil {
			c.WriteError(err.Error())
			return
		}
	}
	s.mu.Lock()
	proto := s.protos[sha]
	s.mu.Unlock()
	if proto == nil {
		c.WriteError("NOSCRIPT No matching script. Please use EVAL.")
		return
	}
	n, err := strconv.Atoi(args[1])
	switch {
	case err != nil:
		c.WriteError("ERR value is not an integer or out of range")
		return
	case n < 0:
		c.WriteError("ERR Number of keys can't be negative")
		return
	case n > len(args)-2:
		c.WriteError("ERR Number of keys can't be greater than number of args")
		return
	}
	keys, argv := args[2:2+n], args[2+n:]

	st := s.states.Get().(*scriptState)
	l := st.l
	l.SetGlobal("KEYS", stringTable(l, keys))
	l.SetGlobal("ARGV", stringTable(l, argv))

	s.rw.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	l.SetContext(ctx)
	mem := watchMemory(cancel)
	l.Push(l.NewFunctionFromProto(proto))
	err = l.PCall(0, 1, nil)
	l.RemoveContext()
	overMemory := mem.Stop() && err != nil
	killed := err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()
	s.rw.Unlock()
	if killed || overMemory {
		// Stopped between two instructions, wherever it was: a fresh
		// state serves the next script.
		s.discard(st)
		if overMemory {
			c.WriteError(fmt.Sprintf(errScriptMemory, scriptMemory>>20))
			return
		}
		c.WriteError(fmt.Sprintf(errScriptTimeout, scriptTimeout))
		return
	}
	var ret lua.LValue = lua.LNil
	if err == nil {
		ret = l.Get(-1)
	}
	l.SetTop(0)
	st.restore()
	s.states.Put(st)
	if err != nil {
		msg := err.Error()
		if e, ok := err.(*lua.ApiError); ok {
			msg = e.Object.String()
		}
		if !strings.HasPrefix(msg, "ERR") && !strings.HasPrefix(msg, "WRONGTYPE") {
			msg = "ERR " + msg
		}
		c.WriteError(strings.ReplaceAll(msg, "\n", " "))
		return
	}
	writeLua(c, ret)
}

// discard closes a state that is not to serve again, and forgets its
// command peer.
func (s *scripts) discard(st *scriptState) {
	s.mu.Lock()
	delete(s.nested, st.call.peer)
	delete(s.scriptPeers, st.call.peer)
	s.mu.Unlock()
	st.l.Close()
}

func stringTable(l *lua.LState, ss []string) *lua.LTable {
	t := l.CreateTable(len(ss), 0)
	for i, v := range ss {
		t.RawSetInt(i+1, lua.LString(v))
	}
	return t
}

// newState opens a state with the libraries and the redis module.
func (s *scripts) newState() *scriptState {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	sandbox(l)
	boundLibs(l)
	st := &scriptState{l: l, call: &scriptCall{}}
	st.call.w = bufio.NewWriter(&st.call.buf)
	st.call.peer = mserver.NewPeer(st.call.w)
	s.mu.Lock()
	s.nested[st.call.peer] = struct{}{}
	s.mu.Unlock()
	s.authenticate(st.call)
	s.mu.Lock()
	s.scriptPeers[st.call.peer] = struct{}{}
	s.mu.Unlock()

	mod := l.NewTable()
	l.SetFuncs(mod, map[string]lua.LGFunction{
		"call":  func(l *lua.LState) int { return s.redisCall(l, st.call, true) },
		"pcall": func(l *lua.LState) int { return s.redisCall(l, st.call, false) },
		"status_reply": func(l *lua.LState) int {
			t := l.NewTable()
			t.RawSetString("ok", lua.LString(l.CheckString(1)))
			l.Push(t)
			return 1
		},
		"error_reply": func(l *lua.LState) int {
			t := l.NewTable()
			t.RawSetString("err", lua.LString(l.CheckString(1)))
			l.Push(t)
			return 1
		},
		"sha1hex": func(l *lua.LState) int {
			sum := sha1.Sum([]byte(l.CheckString(1)))
			l.Push(lua.LString(hex.EncodeToString(sum[:])))
			return 1
		},
		"log": func(*lua.LState) int { return 0 },
	})
	l.SetGlobal("redis", mod)
	st.pristine = snapshot(l)
	return st
}

// redisCall runs one redis.call (raise: an error reply raises) or
// redis.pcall (an error reply is returned as {err=...}).
func (s *scripts) redisCall(l *lua.LState, call *scriptCall, raise bool) int {
	top := l.GetTop()
	if top == 0 {
		l.RaiseError("Please specify at least one argument for this redis lib call")
		return 0
	}
	args := make([]string, top)
	for i := 1; i <= top; i++ {
		switch v := l.Get(i).(type) {
		case lua.LString:
			args[i-1] = string(v)
		case lua.LNumber:
			args[i-1] = v.String()
		default:
			l.RaiseError("Lua redis lib command arguments must be strings or integers")
			return 0
		}
	}
	call.buf.Reset()
	s.srv.Dispatch(call.peer, args)
	call.w.Flush()
	reply, err := mserver.ParseReply(bufio.NewReader(&call.buf))
	if err != nil {
		if raise {
			l.RaiseError("%s", err.Error())
			return 0
		}
		t := l.NewTable()
		t.RawSetString("err", lua.LString(err.Error()))
		l.Push(t)
		return 1
	}
	l.Push(toLua(l, reply))
	return 1
}
