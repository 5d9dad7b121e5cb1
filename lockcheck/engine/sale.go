package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The sale: the business a search runs unless told otherwise. Each
// client sells one item: GET stock, then SET stock-1 with INCR sold (one
// pipeline). Two clients that sell inside their sections at once both
// read the same stock: one sale overwrites the other, and sold runs
// ahead of what the stock says went (OVERSOLD).

// Keys of the sale.
const (
	SaleStock = "stock"
	SaleSold  = "sold"
	SaleFence = "fence" // the highest fencing token seen, for the fenced sale
)

// Oversell is a sale the stock does not show: the sale's Judge's error.
type Oversell struct{ N int64 }

func (o *Oversell) Error() string {
	sales := "sales"
	if o.N == 1 {
		sales = "sale"
	}
	return fmt.Sprintf("%d %s more than the stock went down: two clients wrote inside their sections at once", o.N, sales)
}

// SaleJudge judges a sale over keys stock and sold that started with
// initial in stock: sold - (initial - stock) > 0 is an Oversell.
func SaleJudge(initial int64) func(values []string) error {
	return func(v []string) error {
		stock, _ := strconv.ParseInt(v[0], 10, 64)
		sold, _ := strconv.ParseInt(v[1], 10, 64)
		if n := sold - (initial - stock); n > 0 {
			return &Oversell{N: n}
		}
		return nil
	}
}

// ShowCounts shows counters, a missing one as 0: "10/0".
func ShowCounts(v []string) string {
	s := ""
	for i, x := range v {
		if x == "" {
			x = "0"
		}
		if i > 0 {
			s += "/"
		}
		s += x
	}
	return s
}

// SaleNote notes a step that sold: sold (the second key) went up.
func SaleNote(before, after []string) string {
	b, _ := strconv.ParseInt(before[1], 10, 64)
	a, _ := strconv.ParseInt(after[1], 10, 64)
	if a > b {
		return "sold one"
	}
	return ""
}

// saleBusiness is the plain sale on keys stock and sold.
var saleBusiness = Business{
	Init: map[string]string{SaleStock: strconv.Itoa(InitialStock)},
	Keys: []string{SaleStock, SaleSold}, Judge: SaleJudge(InitialStock), Show: ShowCounts, Note: SaleNote,
	Run: func(ctx context.Context, rdb redis.UniversalClient, _ Held) error { return sell(ctx, rdb) },
}

// FencedSale is the sale with the holder's fencing token: token(held)
// (positive, larger at every acquisition). Its read and its write each
// go through a script that refuses a token smaller than the largest the
// stock has seen, and raises it, as storage that checks fencing tokens
// does: a holder whose lease lapsed, once a newer holder has read,
// neither reads nor writes.
func FencedSale(token func(Held) (int64, error)) *Business {
	b := saleBusiness
	b.Run = func(ctx context.Context, rdb redis.UniversalClient, held Held) error {
		tok, err := token(held)
		if err != nil {
			return err
		}
		return sellFenced(ctx, rdb, tok)
	}
	return &b
}

// errStale is a fenced read or write refused: a newer token has been seen.
var errStale = errors.New("refused: a newer fencing token has been seen")

func sell(ctx context.Context, rdb redis.UniversalClient) error {
	n, err := rdb.Get(ctx, SaleStock).Int64()
	if err != nil {
		return err
	}
	if n <= 0 {
		return errors.New("sold out")
	}
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, SaleStock, n-1, 0)
		p.Incr(ctx, SaleSold)
		return nil
	})
	return err
}

var (
	fencedRead = redis.NewScript(`-- Read the stock under a fencing token
local highest = tonumber(redis.call("GET", KEYS[1]) or "0")
local token = tonumber(ARGV[1])
if token < highest then return {0, highest} end
redis.call("SET", KEYS[1], ARGV[1])
return {1, tonumber(redis.call("GET", KEYS[2]) or "0")}`)
	fencedWrite = redis.NewScript(`-- Sell under a fencing token
local highest = tonumber(redis.call("GET", KEYS[1]) or "0")
local token = tonumber(ARGV[1])
if token < highest then return {0, highest} end
redis.call("SET", KEYS[1], ARGV[1])
redis.call("SET", KEYS[2], ARGV[2])
return {1, redis.call("INCR", KEYS[3])}`)
)

func sellFenced(ctx context.Context, rdb redis.UniversalClient, token int64) error {
	r, err := fencedRead.Run(ctx, rdb, []string{SaleFence, SaleStock}, token).Int64Slice()
	switch {
	case err != nil:
		return err
	case r[0] == 0:
		return errStale
	case r[1] <= 0:
		return errors.New("sold out")
	}
	w, err := fencedWrite.Run(ctx, rdb, []string{SaleFence, SaleStock, SaleSold}, token, r[1]-1).Int64Slice()
	switch {
	case err != nil:
		return err
	case w[0] == 0:
		return errStale
	}
	return nil
}

// saleScripts name the sale's scripts in the diagram.
var saleScripts = []ScriptName{
	{Prefix: "-- Read the stock under a fencing token", Name: "fenced-read"},
	{Prefix: "-- Sell under a fencing token", Name: "fenced-sell"},
}
