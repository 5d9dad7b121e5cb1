// Package inventory keeps the lab's shared state in Redis: the stock of
// articles, an independent counter of sales, and the counter num.
//
// Sell and Incr are deliberately non-atomic read-modify-writes, exactly as
// in the articles (GET, check, SET): they are only correct under a lock that
// really excludes. SellAtomic and IncrAtomic are the ceiling: one script or
// one command, no lock needed.
package inventory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
)

// Keys in Redis. Every key of the item, its locks' too, carries the
// item's name as a hash tag ({item}): on a Redis Cluster they all hash to
// one slot, so that a script or a transaction that touches several of
// them (a fenced write: the stock, the sold counter and the highest token
// seen; fair's lock, queue and fence) runs on one node. Keys a lock
// derives from its own (lock:{item}:stock:fence) keep the tag.
const (
	// ItemTag is the hash tag of the lab's item.
	ItemTag = "{item}"

	KeyStock = ItemTag + ":stock" // articles left
	KeySold  = ItemTag + ":sold"  // INCRed once per successful sale, atomically
	KeyNum   = ItemTag + ":num"   // the /testLock counter

	// LockPrefix starts every lock key; Reset deletes the item's
	// (Item.LockKeys).
	LockPrefix = "lock:"
	// StockLock guards the stock, NumLock guards num.
	StockLock = LockPrefix + ItemTag + ":stock"
	NumLock   = LockPrefix + ItemTag + ":num"
)

// Item is one item's keys. The lab's item (sku "") has the keys above;
// another item, sku=ID, has the same keys under its own hash tag,
// {item:ID}, so that each item's keys share a slot and different items
// spread over a cluster's masters.
type Item struct {
	SKU        string // "" for the lab's item
	Scope      string // the run's whose counters these are; "" for the lab's
	Tag        string // {item} or {item:ID}
	Stock      string
	Sold       string
	Num        string
	StockLock  string
	NumLock    string
	StockFence string // the highest fencing token seen on the stock (see fenced.go)
	NumFence   string
}

// MaxSKULen bounds an item's ID; MaxSKUs, the items /reset?skus=K sets
// and bench -skus K spreads over.
const (
	MaxSKULen = 40
	MaxSKUs   = 1000
)

// ItemOf returns the keys of item sku ("" for the lab's item). It does
// not check sku: ParseSKU does.
func ItemOf(sku string) Item {
	tag := ItemTag
	if sku != "" {
		tag = "{item:" + sku + "}"
	}
	stockLock, numLock := LockPrefix+tag+":stock", LockPrefix+tag+":num"
	return Item{SKU: sku, Tag: tag, Stock: tag + ":stock", Sold: tag + ":sold", Num: tag + ":num",
		StockLock: stockLock, NumLock: numLock, StockFence: stockLock + fenceSuffix, NumFence: numLock + fenceSuffix}
}

// ItemIn returns the keys of item sku ("" for the lab's item) in a run's
// scope (package guard: "run12"), or the lab's (ItemOf) for scope "".
// A scope's items have tags of their own, {run12:item} and
// {run12:item:ID}, that no sku= can name: only the requests that carry
// the run's token reach them, so nothing else changes what the run reads
// back. A section's key is the run's when it holds ScopeMark(scope).
func ItemIn(scope, sku string) Item {
	if scope == "" {
		return ItemOf(sku)
	}
	tag := "{" + scope + ":item}"
	if sku != "" {
		tag = "{" + scope + ":item:" + sku + "}"
	}
	stockLock, numLock := LockPrefix+tag+":stock", LockPrefix+tag+":num"
	return Item{SKU: sku, Scope: scope, Tag: tag, Stock: tag + ":stock", Sold: tag + ":sold", Num: tag + ":num",
		StockLock: stockLock, NumLock: numLock, StockFence: stockLock + fenceSuffix, NumFence: numLock + fenceSuffix}
}

// ScopeMark is what every key of scope's items holds ("" for the lab's
// scope, whose keys hold none).
func ScopeMark(scope string) string {
	if scope == "" {
		return ""
	}
	return "{" + scope + ":item"
}

// The keys the lock rungs derive from a lock key, besides the lock key
// itself and the highest token seen (fenceSuffix): package lock's
// FenceKey, the token counter of fenced, fair and the cohorts, and
// QueueKey, fair's queue of waiters with their deadlines. The handlers'
// tests check that no rung leaves any other key under an item's tag.
const (
	counterSuffix = ":fence"
	queueSuffix   = ":queue"
	liveSuffix    = ":queue:live"
)

// LockKeys are every key the lock rungs keep in Redis for the item's two
// locks: what Reset deletes, by name.
func (it Item) LockKeys() []string {
	var keys []string
	for _, l := range []string{it.StockLock, it.NumLock} {
		keys = append(keys, l, l+counterSuffix, l+queueSuffix, l+liveSuffix, l+fenceSuffix)
	}
	return keys
}

// ParseSKU checks an item's ID: 1 to MaxSKULen letters, digits, '-' or '_'
// (no braces: the ID goes into a hash tag).
func ParseSKU(sku string) error {
	if sku == "" || len(sku) > MaxSKULen {
		return fmt.Errorf("an item's ID has 1 to %d characters, got %d", MaxSKULen, len(sku))
	}
	for _, r := range sku {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '-', r == '_':
		default:
			return fmt.Errorf("an item's ID has only letters, digits, '-' and '_', got %q", sku)
		}
	}
	return nil
}

// SKUs names the K items that /reset?skus=K sets and bench -skus K
// sells: "1" to "K".
func SKUs(k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

// ErrSoldOut means there was no stock left to sell.
var ErrSoldOut = errors.New("inventory: sold out")

//go:embed sell_atomic.lua
var sellAtomicSrc string

var sellAtomic = redis.NewScript(sellAtomicSrc)

// Store is one item's inventory in Redis.
type Store struct {
	rdb redis.Cmdable
	it  Item
	// loaded: the scripts sent by digest are in Redis, as far as we know
	// (digests.go); one for every item's store over rdb.
	loaded *atomic.Bool
}

// labItem is the lab's item's keys, built once: every request without
// sku= uses them.
var labItem = ItemOf("")

// New returns the Store of the lab's item over rdb.
func New(rdb redis.Cmdable) *Store { return &Store{rdb: rdb, it: labItem, loaded: new(atomic.Bool)} }

// Item returns the Store of item sku over the same Redis ("" for the
// lab's item). The store's own item is s itself: a request without sku=
// allocates nothing here.
func (s *Store) Item(sku string) *Store {
	return s.ItemIn("", sku)
}

// ItemIn returns the Store of item sku in a run's scope (ItemIn; ""
// for the lab's).
func (s *Store) ItemIn(scope, sku string) *Store {
	if sku == s.it.SKU && scope == s.it.Scope {
		return s
	}
	if scope != "" {
		return &Store{rdb: s.rdb, it: ItemIn(scope, sku), loaded: s.loaded}
	}
	if sku == "" {
		return &Store{rdb: s.rdb, it: labItem, loaded: s.loaded}
	}
	return &Store{rdb: s.rdb, it: ItemOf(sku), loaded: s.loaded}
}

// Keys are the store's item's keys.
func (s *Store) Keys() Item { return s.it }

// Snapshot is the state read back after a run.
type Snapshot struct {
	Stock int64 `json:"stock"`
	Sold  int64 `json:"sold"`
	Num   int64 `json:"num"`
	// Master is the address of the Redis Cluster master that holds the
	// item's slot; empty on one Redis.
	Master string `json:"master,omitempty"`
}

// Guard is what the lock an operation runs under hands it: the zero
// Guard is a plain lock's (or none), and the operation is the articles'
// read-modify-write. A lock that offers more fills in more, and the
// operation uses it: this is the one place where what a lock offers
// picks how the section talks to Redis.
type Guard struct {
	// Token is the lock's fencing token: the read and the write go
	// through scripts that refuse a token lower than the highest seen
	// (fenced.go). 0 for a lock without one.
	Token int64
	// Then queues commands behind the operation's last write, in its
	// pipeline: a lock's release that rides the write.
	Then []Then
	// Pipe sends the fenced read and write down the lock's ordered pipe
	// (piped.go). Only with a Token.
	Pipe Pipe
	// Carrier hands the value the last holder left to the next, and
	// commits the writes in order (carried.go). Only with a Token; it
	// goes before Pipe.
	Carrier Carrier
	// Queued, when the write goes down a Pipe or a Carrier, is called
	// once it is queued and before the operation waits for it to land:
	// the holder lets go of the lock there, so that the next holder's
	// commands may share the write's round trip.
	Queued func()
}

// Then queues commands to run right behind an operation's last write, in
// the same pipeline and so the same round trip: a lock's release
// (Guard.Then), say. Redis runs a pipeline in order, so they run after
// the write has landed. An operation calls its Thens only when it
// reaches its write (not when it is sold out, or fails before); their
// commands' errors are theirs to read, not the operation's.
type Then func(p redis.Pipeliner)

// op is one operation on an item: the key it reads and writes, the
// highest token seen on it, the counter it INCRs beside its write ("" for
// none) and its business, what it makes of the value read.
type op struct {
	key, fence, counter string
	f                   func(int64) (int64, error)
}

// Sell sells one item under g. Under a plain lock it does what the
// articles do: GET the stock, check it, SET it one lower, then count the
// sale. Two callers that interleave here both sell the same item. It
// returns the stock left, ErrSoldOut, or (under a Token) ErrStaleToken.
//
// The SET and the INCR of sold go in one pipeline, with any Thens behind
// them: the read-modify-write keeps its gap between GET and SET, which is
// the lesson, and pays one round trip for its writes instead of two.
func (s *Store) Sell(ctx context.Context, g Guard) (int64, error) {
	return s.run(ctx, g, op{key: s.it.Stock, fence: s.it.StockFence, counter: s.it.Sold, f: sellOne})
}

// Incr adds one to num under g, the non-atomic way: GET num, SET num+1.
func (s *Store) Incr(ctx context.Context, g Guard) (int64, error) {
	return s.run(ctx, g, op{key: s.it.Num, fence: s.it.NumFence, f: addOne})
}

// run runs o the way g says.
func (s *Store) run(ctx context.Context, g Guard, o op) (int64, error) {
	var (
		n      int64
		landed func() error
		err    error
	)
	switch {
	case g.Token == 0:
		return s.plain(ctx, o, g.Then)
	case g.Carrier != nil:
		n, landed, err = s.carried(ctx, g.Token, g.Carrier, o)
	case g.Pipe != nil:
		n, landed, err = s.piped(ctx, g.Token, g.Pipe, o)
	default:
		return s.fenced(ctx, g.Token, o, g.Then)
	}
	if err != nil {
		return 0, err
	}
	if g.Queued != nil {
		g.Queued()
	}
	return n, landed()
}

// plain is the articles' read-modify-write: GET, the business, SET (and
// INCR the counter) with any Thens behind.
func (s *Store) plain(ctx context.Context, o op, then []Then) (int64, error) {
	n, err := s.get(ctx, o.key)
	if err != nil {
		return 0, err
	}
	v, err := o.f(n)
	if err != nil {
		return 0, err
	}
	fault.Inject(ctx, fault.Business) // work= and fault=pause strike here
	if err := written(ctx); err != nil {
		return 0, err
	}
	var set *redis.StatusCmd
	var incr *redis.IntCmd
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.Set(ctx, o.key, v, 0)
		if o.counter != "" {
			incr = p.Incr(ctx, o.counter)
		}
		for _, f := range then {
			f(p)
		}
		return nil
	})
	if err := set.Err(); err != nil {
		return 0, fmt.Errorf("inventory: SET %s: %w", o.key, err)
	}
	if incr != nil {
		if err := incr.Err(); err != nil {
			return 0, fmt.Errorf("inventory: INCR %s: %w", o.counter, err)
		}
	}
	return v, nil
}

// written is the business's check before its write: a context that
// ended (a lock that says it was lost ends it: rueidislock's) writes
// nothing, and says why.
func written(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("inventory: not written: %w", err)
	}
	return nil
}

// sellOne is a sale's business: one article less, or sold out.
func sellOne(n int64) (int64, error) {
	if n <= 0 {
		return 0, ErrSoldOut
	}
	return n - 1, nil
}

// addOne is /testLock's business.
func addOne(n int64) (int64, error) { return n + 1, nil }

// SellAtomic sells one item in a single Lua script: check, decrement and
// count cannot interleave with anyone. It returns the stock left, or
// ErrSoldOut.
func (s *Store) SellAtomic(ctx context.Context) (int64, error) {
	n, err := sellAtomic.Run(ctx, s.rdb, []string{s.it.Stock, s.it.Sold}).Int64()
	if err != nil {
		return 0, fmt.Errorf("inventory: sell script: %w", err)
	}
	if n < 0 {
		return 0, ErrSoldOut
	}
	return n, nil
}

// IncrAtomic adds one to num with INCR, which Redis runs atomically.
func (s *Store) IncrAtomic(ctx context.Context) (int64, error) {
	n, err := s.rdb.Incr(ctx, s.it.Num).Result()
	if err != nil {
		return 0, fmt.Errorf("inventory: INCR %s: %w", s.it.Num, err)
	}
	return n, nil
}

// Snapshot reads stock, sold and num in one MGET.
func (s *Store) Snapshot(ctx context.Context) (Snapshot, error) {
	vals, err := s.rdb.MGet(ctx, s.it.Stock, s.it.Sold, s.it.Num).Result()
	if err != nil {
		return Snapshot{}, fmt.Errorf("inventory: MGET: %w", err)
	}
	var out [3]int64
	for i, v := range vals {
		if v == nil {
			continue
		}
		str, _ := v.(string)
		if out[i], err = strconv.ParseInt(str, 10, 64); err != nil {
			return Snapshot{}, fmt.Errorf("inventory: key %d holds %q, not an integer", i, str)
		}
	}
	snap := Snapshot{Stock: out[0], Sold: out[1], Num: out[2]}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, s.it.Stock)
		if err != nil {
			return Snapshot{}, fmt.Errorf("inventory: the master of %s: %w", s.it.Stock, err)
		}
		snap.Master = m.Options().Addr
	}
	return snap, nil
}

// Reset sets the item's stock, zeroes its sold and num, and deletes its
// lock keys, so that no lock from an earlier run survives into the next.
// It names the lock keys (Item.LockKeys) rather than look for them: one
// transaction, one round trip, however many keys Redis holds. They share
// the item's slot, so it runs on one node, on a cluster too.
func (s *Store) Reset(ctx context.Context, stock int64) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.it.Stock, stock, 0)
		p.Set(ctx, s.it.Sold, 0, 0)
		p.Set(ctx, s.it.Num, 0, 0)
		p.Del(ctx, s.it.LockKeys()...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("inventory: reset: %w", err)
	}
	return nil
}

// Exists reports whether the item exists: whether a Reset made it (its
// stock key is there). Nothing else creates one.
func (s *Store) Exists(ctx context.Context) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.it.Stock).Result()
	if err != nil {
		return false, fmt.Errorf("inventory: EXISTS %s: %w", s.it.Stock, err)
	}
	return n == 1, nil
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("inventory: PING: %w", err)
	}
	return nil
}

func (s *Store) get(ctx context.Context, key string) (int64, error) {
	n, err := s.rdb.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("inventory: GET %s: %w", key, err)
	}
	return n, nil
}
