package bench

// WriteHTMLBeside exposes writeHTMLBeside to the external tests.
var WriteHTMLBeside = writeHTMLBeside
