package handlers

import (
	"github.com/gin-gonic/gin"
)

// origin refuses, before any handler runs, a request for a Host the lab
// does not serve (421) and one another site's page had a browser send
// (403): package origin says which and why.
func (h *handler) origin(c *gin.Context) {
	if status, reason, msg := h.hosts.Check(c.Request); status != 0 {
		c.AbortWithStatusJSON(status, gin.H{"error": msg, "reason": reason})
		return
	}
	c.Next()
}
