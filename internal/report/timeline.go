package report

import _ "embed"

// TimelineJS is the script that draws a race's timeline on a canvas: the
// page's, and the HTML reports'.
//
//go:embed timeline.js
var TimelineJS string
