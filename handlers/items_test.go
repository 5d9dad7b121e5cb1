package handlers_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestSkuSellsThatItemOnly: under every lock, sku=ID sells and counts
// item ID, and the lab's item and the others stay as they were; /stock
// and /reset take sku= too, and /reset?skus=K sets items 1 to K.
func TestSkuSellsThatItemOnly(t *testing.T) {
	for _, name := range []string{"none", "setnx-px", "lua", "getset", "reentrant", "fenced", "fair", "cohort", "cohort-carry", "atomic"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			mustDo(t, e, "POST", "/reset?stock=5", 200)
			if _, _, body := mustDo(t, e, "POST", "/reset?stock=3&skus=2", 200); body["skus"] != 2.0 || body["stock"] != 3.0 {
				t.Fatalf("reset skus=2: %v", body)
			}
			// Uncontended, each takes its lock at once; try=2s, not the
			// env's 50ms, so that a loaded machine (make test runs the
			// packages side by side, under -race) cannot make it a 503.
			wait := "&try=2s"
			if name == "none" || name == "atomic" {
				wait = "" // they never wait: try= is a 400
			}
			for range 2 {
				mustDo(t, e, "POST", "/sale?lock="+name+"&sku=2"+wait, 200)
				mustDo(t, e, "GET", "/testLock?lock="+name+"&sku=2"+wait, 200)
			}
			if _, _, body := mustDo(t, e, "GET", "/sale?lock="+name+"&sku=2"+wait, 200); body["remaining"] != 0.0 {
				t.Fatalf("third sale of item 2: %v, want remaining 0", body)
			}
			mustDo(t, e, "GET", "/sale?lock="+name+"&sku=2"+wait, 409)
			for target, want := range map[string]string{
				"/stock":       "5 0 0",
				"/stock?sku=1": "3 0 0",
				"/stock?sku=2": "0 3 2",
			} {
				_, _, body := mustDo(t, e, "GET", target, 200)
				if got := fmt.Sprint(body["stock"], " ", body["sold"], " ", body["num"]); got != want {
					t.Errorf("%s: stock sold num %s, want %s", target, got, want)
				}
			}
			mustDo(t, e, "POST", "/reset?stock=4&sku=2", 200)
			if _, _, body := mustDo(t, e, "GET", "/stock?sku=2", 200); body["stock"] != 4.0 || body["sold"] != 0.0 {
				t.Fatalf("item 2 after its reset: %v", body)
			}
		})
	}
}

// TestSkuBadInputChangesNothing: a bad sku= or skus= is a 400 that says
// what is wrong, and no item changes.
func TestSkuBadInputChangesNothing(t *testing.T) {
	e := newEnv(t)
	mustDo(t, e, "POST", "/reset?stock=5&skus=2", 200)
	mustDo(t, e, "POST", "/reset?stock=5", 200)
	for target, says := range map[string]string{
		"/sale?lock=lua&sku=":                               "sku: an item's ID has 1 to",
		"/sale?lock=lua&sku=a%7Db":                          "only letters, digits",
		"/testLock?lock=lua&sku=" + strings.Repeat("x", 41): "1 to 40 characters",
		"/sale?lock=db-optimistic&sku=1":                    "its table in MariaDB keeps the lab's one item",
		"/stock?sku=a*":                                     "only letters, digits",
		"/reset?stock=1&skus=0":                             "skus: 0 is out of range [1, 1000]",
		"/reset?stock=1&skus=1001":                          "skus: 1001 is out of range",
		"/reset?stock=1&skus=x":                             "skus: \"x\" is not a whole number",
		"/reset?stock=1&sku=1&skus=2":                       "not both",
		"/reset?stock=1&sku=%7B":                            "only letters, digits",
	} {
		method := "POST"
		if strings.HasPrefix(target, "/stock") {
			method = "GET"
		}
		_, _, body := mustDo(t, e, method, target, 400)
		if msg, _ := body["error"].(string); !strings.Contains(msg, says) {
			t.Errorf("%s: error %q, want it to say %q", target, msg, says)
		}
	}
	for _, target := range []string{"/stock", "/stock?sku=1", "/stock?sku=2"} {
		if _, _, body := mustDo(t, e, "GET", target, 200); body["stock"] != 5.0 || body["sold"] != 0.0 || body["num"] != 0.0 {
			t.Errorf("%s after bad requests: %v, want stock 5 and nothing sold", target, body)
		}
	}
}

// mustDo is e.do, failing the test unless the answer has status code.
func mustDo(t *testing.T, e *env, method, target string, code int) (int, map[string][]string, map[string]any) {
	t.Helper()
	got, h, body := e.do(t, method, target)
	if got != code {
		t.Fatalf("%s %s: %d %v, want %d", method, target, got, body, code)
	}
	return got, h, body
}
