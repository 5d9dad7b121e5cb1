package redisfam_test

import "os"

// ci is true under CI=true: a missing redis-server fails a test instead
// of skipping it, and Auto must not fall back.
var ci = os.Getenv("CI") == "true"
