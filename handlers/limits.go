package handlers

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
)

// Request size limits. No endpoint takes a body, and every query fits in a
// few dozen bytes: anything near these is a mistake or an attack, refused
// before a handler runs and so before anything touches Redis.
const (
	// MaxBodyBytes is the largest request body accepted; a larger one is
	// answered 413.
	MaxBodyBytes = 64 << 10
	// MaxURIBytes is the longest request target (path and query) accepted;
	// a longer one is answered 414. nginx in front refuses a request line
	// over its 8k header buffer (large_client_header_buffers) the same way,
	// so both paths agree. (net/http itself refuses a header section over
	// the server's MaxHeaderBytes with a plain-text 431, before the router
	// sees it.)
	MaxURIBytes = 8 << 10
)

// limits is the middleware that answers an oversized request target 414
// and an oversized body 413, both as JSON, and aborts. A body of unknown
// length (chunked) is read up to maxBody+1 bytes to tell; what was read is
// put back for the handler.
func limits(maxBody int64, maxURI int) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		uri := r.RequestURI
		if uri == "" {
			uri = r.URL.RequestURI()
		}
		if len(uri) > maxURI {
			tooLarge(c, http.StatusRequestURITooLong,
				fmt.Sprintf("request target of %d bytes is over the limit of %d", len(uri), maxURI))
			return
		}
		switch {
		case r.ContentLength > maxBody:
			tooLarge(c, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("request body of %d bytes is over the limit of %d: no endpoint takes a body", r.ContentLength, maxBody))
			return
		case r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody:
			buf, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			if int64(len(buf)) > maxBody {
				tooLarge(c, http.StatusRequestEntityTooLarge,
					fmt.Sprintf("request body is over the limit of %d bytes: no endpoint takes a body", maxBody))
				return
			}
			if err != nil {
				c.Header("Connection", "close")
				c.AbortWithStatusJSON(http.StatusBadRequest, gin.H{"error": "reading the request body: " + err.Error(), "reason": ReasonBadRequest})
				return
			}
			r.Body = readCloser{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
		}
		c.Next()
	}
}

// tooLarge answers code with a JSON error and closes the connection: the
// rest of an oversized request is not worth reading.
func tooLarge(c *gin.Context, code int, msg string) {
	c.Header("Connection", "close")
	c.AbortWithStatusJSON(code, gin.H{"error": msg, "reason": ReasonTooLarge})
}

type readCloser struct {
	io.Reader
	io.Closer
}
