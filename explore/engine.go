package explore

import "github.com/lockladder/lockladder/lockcheck/engine"

// The explorer's engine is lockcheck's (package lockcheck/engine): the
// gate, the worlds, the search, the replay on redis-server and the game.
// The lab names what it uses of it here, so that its callers (the race
// server, bench explore) read the lab's explorer as one package.

type (
	Target     = engine.Target
	Config     = engine.Config
	Result     = engine.Result
	Cover      = engine.Cover
	Step       = engine.Step
	Site       = engine.Site
	Choice     = engine.Choice
	ChoiceKind = engine.ChoiceKind
	Faults     = engine.Faults
	Replayer   = engine.Replayer
	Explorer   = engine.Explorer
	Business   = engine.Business
	Locker     = engine.Locker
	Held       = engine.Held
	Env        = engine.Env
	RoundWatch = engine.RoundWatch
	Game       = engine.Game
	ClientView = engine.ClientView
	KeyView    = engine.KeyView
	Option     = engine.Option
	MoveError  = engine.MoveError
)

const (
	Crash   = engine.Crash
	Pause   = engine.Pause
	Skew    = engine.Skew
	Slow    = engine.Slow
	Late    = engine.Late
	Idle    = engine.Idle
	Restart = engine.Restart
	Lost    = engine.Lost
	Cancel  = engine.Cancel

	Oversold = engine.Oversold
	Deadlock = engine.Deadlock
	Leaked   = engine.Leaked
	Violated = engine.Violated
	None     = engine.None

	MaxMoves = engine.MaxMoves

	Deliver   = engine.Deliver
	DeliverWD = engine.DeliverWD
	Tick      = engine.Tick
	CrashIt   = engine.CrashIt
	PauseIt   = engine.PauseIt
	SkewIt    = engine.SkewIt
	RestartIt = engine.RestartIt
	LoseIt    = engine.LoseIt

	CancelIt      = engine.CancelIt
	CancelAfterIt = engine.CancelAfterIt
)

var (
	// New starts an explorer of t (engine.New).
	New = engine.New
	// Play replays a game's moves (engine.Play).
	Play = engine.Play
	// PlayLease replays a game's moves on a lease of its own (engine.PlayLease).
	PlayLease = engine.PlayLease
	// Goal states what breaking a rung means.
	Goal        = engine.Goal
	ParseMove   = engine.ParseMove
	FormatMove  = engine.FormatMove
	ParseFaults = engine.ParseFaults
	// FaultWords says in words what a level's faults let happen.
	FaultWords = engine.FaultWords
	ErrBusy    = engine.ErrBusy
	// ErrNotObtained is the engine's: an Obtain that found the lock held.
	ErrNotObtained = engine.ErrNotObtained
)
