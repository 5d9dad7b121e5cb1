package bench

// WriteHTMLBeside exposes writeHTMLBeside to the external tests.
var WriteHTMLBeside = writeHTMLBeside

// LBFailTimeout exposes lbFailTimeout to the external tests.
const LBFailTimeout = lbFailTimeout
