package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/lockladder/lockladder/bench/history"
	"github.com/lockladder/lockladder/inventory"
)

// ItemRow is one item's part of a run spread over items (Config.SKUs),
// judged on its own as a run of its own would be: its requests, its
// counters read back, its history.
type ItemRow struct {
	SKU         string `json:"sku"`
	Master      string `json:"master,omitempty"` // the Redis Cluster master that holds it
	Requests    int    `json:"requests"`
	OK          int    `json:"ok"`
	Initial     int64  `json:"initial"`
	Remaining   int64  `json:"remaining"`
	Sold        int64  `json:"sold"`
	Num         int64  `json:"num"`
	Oversold    int64  `json:"oversold"`
	LostUpdates int64  `json:"lost_updates"`
	// Linearizable is the history checker's finding on the item's
	// requests; Visualization shows an illegal one.
	Linearizable  string `json:"linearizable"`
	Visualization string `json:"visualization,omitempty"`
	Verdict       string `json:"verdict"`
}

// skus are the items the runs spread over: nil for the lab's one item.
func (h *harness) skus() []string {
	if h.cfg.SKUs == 0 {
		return nil
	}
	return inventory.SKUs(h.cfg.SKUs) // as the app's /reset?skus=K names them
}

// judgeItems judges a run spread over items, item by item: each item's
// counters are read back and weighed against its own answers and its own
// history, so that one item oversold cannot hide behind another's lost
// answer. row gets the totals, the items (Row.Items), the sales per
// Redis Cluster master (Row.Masters) and the worst item's verdict: SAFE
// only when every item is.
func (h *harness) judgeItems(ctx context.Context, row *Row, ops []history.Op, since time.Time) error {
	byItem := map[string][]history.Op{}
	for _, op := range ops {
		byItem[op.Item] = append(byItem[op.Item], op)
	}
	if len(byItem[""]) > 0 {
		return fmt.Errorf("%d answers came from requests for no item", len(byItem[""]))
	}
	perItem := row.Initial // the reset answers one item's stock
	row.Initial, row.Items = 0, make([]ItemRow, 0, h.cfg.SKUs)
	var worst string
	var oversold int64
	row.PossiblyApplied, row.Linearizable = 0, string(history.Ok)
	for _, sku := range h.skus() {
		c, err := h.stock(ctx, row.Lock, sku)
		if err != nil {
			return err
		}
		sub := Row{Scenario: row.Scenario + " item " + sku, Lock: row.Lock, Endpoint: row.Endpoint,
			Initial: perItem, Remaining: *c.Stock, Sold: *c.Sold, Num: *c.Num, Codes: map[string]int{}}
		for _, op := range byItem[sku] {
			sub.Requests++
			if op.Code == 200 {
				sub.OK++
			} else {
				sub.Codes[codeKey(uint16(op.Code))]++
			}
		}
		if err := h.checkHistory(&sub, byItem[sku]); err != nil {
			return err
		}
		Judge(&sub)
		row.Items = append(row.Items, ItemRow{SKU: sku, Master: c.Master, Requests: sub.Requests, OK: sub.OK,
			Initial: sub.Initial, Remaining: sub.Remaining, Sold: sub.Sold, Num: sub.Num,
			Oversold: sub.Oversold, LostUpdates: sub.LostUpdates,
			Linearizable: sub.Linearizable, Visualization: sub.Visualization, Verdict: sub.Verdict})
		row.Initial += sub.Initial
		row.Remaining, row.Sold, row.Num = row.Remaining+sub.Remaining, row.Sold+sub.Sold, row.Num+sub.Num
		row.PossiblyApplied += sub.PossiblyApplied
		if sub.Verdict == VerdictOversold {
			oversold += max(sub.Oversold, 0)
		}
		if worst == "" && sub.Verdict != VerdictSafe {
			worst = sub.Verdict
		}
		switch {
		case sub.Linearizable == string(history.Illegal):
			row.Linearizable, row.Evidence = sub.Linearizable, "item "+sku+": "+sub.Evidence
			if row.Visualization == "" {
				row.Visualization = sub.Visualization
			}
		case sub.Linearizable == string(history.NotKnown) && row.Linearizable == string(history.Ok):
			row.Linearizable = sub.Linearizable
		}
		if c.Master != "" {
			if row.Masters == nil {
				row.Masters = map[string]int{}
			}
			row.Masters[c.Master] += sub.OK
		}
	}
	if err := h.checkSections(ctx, row, since); err != nil {
		return err
	}
	Judge(row)
	if worst != "" && row.Verdict == VerdictSafe {
		row.Verdict = worst
	}
	if oversold > 0 {
		row.Oversold = oversold // not netted against another item's lost answers
	}
	return nil
}
