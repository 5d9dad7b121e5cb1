package handlers

import (
	_ "embed"
	"html/template"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/internal/report"
	"github.com/lockladder/lockladder/lock"
)

//go:embed page.html
var pageSrc string

// The page's scripts that are more than a few lines, each in a file of
// its own, inlined where the page calls their template: the timeline of a
// race, the scenarios and the ladder of flaws, and the explorer's why.
//
//go:embed page_ladder.js
var ladderSrc string

//go:embed page_explore.js
var exploreSrc string

//go:embed page_play.js
var playSrc string

var pageTmpl = func() *template.Template {
	t := template.Must(template.New("page").Parse(pageSrc))
	report.TimelineTemplates(t)
	template.Must(t.New("ladder").Parse(ladderSrc))
	template.Must(t.New("explore").Parse(exploreSrc))
	template.Must(t.New("play").Parse(playSrc))
	return t
}()

// page serves a small HTML page that shows the counters and calls /sale and
// /testLock with a chosen lock.
func (h *handler) page(c *gin.Context) {
	if _, ok := h.query(c); !ok {
		return
	}
	c.Header("Content-Type", "text/html; charset=utf-8")
	// Never inside another site's frame, where a visitor could be made to
	// click its buttons (browsers that send no Sec-Fetch-Dest for origin
	// to refuse the frame with).
	c.Header("X-Frame-Options", "DENY")
	c.Header("Content-Security-Policy", "frame-ancestors 'none'")
	c.Status(http.StatusOK)
	err := pageTmpl.Execute(c.Writer, struct {
		Instance string
		Rungs    []lock.Info
	}{h.cfg.Instance, h.cfg.Ladder.Rungs()})
	if err != nil {
		h.cfg.Log.Error("render page", "err", err)
	}
}
