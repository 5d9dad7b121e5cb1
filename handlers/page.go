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

// The page is cut by card: its markup (page.html) and, each in a file of
// its own, its style rules and scripts, inlined where the page calls
// their template: the race card and its timeline, the charts and table
// of every race, the single requests, the ladder of flaws, the
// explorer's why, the predictions and the game.
var (
	//go:embed page.css
	pageCSS string
	//go:embed page_ladder.css
	ladderCSS string
	//go:embed page_explore.css
	exploreCSS string
	//go:embed page_play.css
	playCSS string
	//go:embed page_race.js
	raceSrc string
	//go:embed page_charts.js
	chartsSrc string
	//go:embed page_request.js
	requestSrc string
	//go:embed page_ladder.js
	ladderSrc string
	//go:embed page_explore.js
	exploreSrc string
	//go:embed page_play.js
	playSrc string
	//go:embed page_predict.js
	predictSrc string
)

var pageTmpl = func() *template.Template {
	t := template.Must(template.New("page").Parse(pageSrc))
	report.TimelineTemplates(t)
	for name, src := range map[string]string{
		"page.css": pageCSS, "ladder.css": ladderCSS, "explore.css": exploreCSS, "play.css": playCSS,
		"race": raceSrc, "charts": chartsSrc, "request": requestSrc,
		"ladder": ladderSrc, "explore": exploreSrc, "play": playSrc, "predict": predictSrc,
	} {
		template.Must(t.New(name).Parse(src))
	}
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
