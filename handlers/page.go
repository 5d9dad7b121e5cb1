package handlers

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/page"
)

// pageRoutes serves the pages (package page): the course at / and
// /learn/NAME, the lab at /lab, and their icon.
func (h *handler) pageRoutes(r *gin.Engine) {
	site := page.New(page.Config{Instance: h.cfg.Instance, Rungs: h.cfg.Ladder.Rungs})
	r.GET("/", h.page(site.Welcome))
	r.GET("/lab", h.page(site.Lab))
	r.GET("/learn/:name", func(c *gin.Context) {
		name := c.Param("name")
		h.page(func(w io.Writer) error { return site.Step(w, name) })(c)
	})
	icon := func(c *gin.Context) { page.Favicon(c.Writer) }
	r.GET("/favicon.ico", icon)
	r.GET("/favicon.svg", icon)
}

// page serves one page that write renders: none of the query parameters
// a page does not take, a 404 for a step the course has not.
func (h *handler) page(write func(io.Writer) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if _, ok := h.query(c); !ok {
			return
		}
		var b bytes.Buffer
		if err := write(&b); err != nil {
			if errors.Is(err, page.ErrNoStep) {
				c.JSON(http.StatusNotFound, gin.H{"error": "no such step of the course: " + c.Param("name") + " (the steps: GET /)"})
				return
			}
			h.cfg.Log.Error("render page", "path", c.Request.URL.Path, "err", err)
			c.JSON(http.StatusInternalServerError, gin.H{"error": "the page could not be drawn"})
			return
		}
		page.Headers(c.Writer)
		c.Status(http.StatusOK)
		c.Writer.Write(b.Bytes())
	}
}
