package speed_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

var notifier = locktest.Notifier

// cohortOn is a Cohort of bound sections (0: the default) over rdb, with
// fair's test options and a notifier; speed.NewCohort for another process on
// the same Redis takes the options it returns.
func cohortOn(t *testing.T, rdb *redis.Client, bound int) (*lock.Cohort, lock.Options) {
	t.Helper()
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	return speed.NewCohort(rdb, o, bound), o
}
