package handlers_test

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The page writes what servers answered as text: the table of races is
// built of text nodes, never from markup (innerHTML) made of the answers.
func TestPageTableIsText(t *testing.T) {
	e := newEnv(t)
	w := httptest.NewRecorder()
	e.router.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 {
		t.Fatalf("GET /: %d", w.Code)
	}
	page := w.Body.String()
	start := strings.Index(page, "function redrawCompare(")
	if start < 0 {
		t.Fatal("the page has no redrawCompare")
	}
	body := page[start:]
	if end := strings.Index(body, "\n}\n"); end >= 0 {
		body = body[:end+2]
	}
	if strings.Contains(body, "innerHTML") || !strings.Contains(body, "textContent") {
		t.Errorf("redrawCompare writes markup, not text:\n%s", body)
	}
}
