package handlers

import (
	"errors"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockladder/lockladder/lock"
)

// Acquisition results, the result label of
// lockladder_lock_acquisitions_total.
const (
	resultObtained    = "obtained"    // the lock was had
	resultTimeout     = "timeout"     // not had within the wait (or try=0 found it held)
	resultUnavailable = "unavailable" // the back end failed, or is not running here
)

// Release failures, the reason label of
// lockladder_lock_release_failures_total.
const (
	releaseNotHeld = "not_held" // the lock was no longer ours: its lease lapsed, or another holder had it
	releaseError   = "error"    // the back end failed: the release may or may not have happened
)

// metrics are what GET /metrics serves, in a registry of the router's own
// (tests build many routers in one process): how long requests wait for
// each lock, how each acquisition ended, how long each critical section
// ran, which releases failed, and Go's and the process's own collectors.
type metrics struct {
	reg      *prometheus.Registry
	wait     *prometheus.HistogramVec
	acquired *prometheus.CounterVec
	section  *prometheus.HistogramVec
	released *prometheus.CounterVec
}

// latencyBuckets span 50µs (a lock had at once) to 10s (past any wait).
var latencyBuckets = prometheus.ExponentialBucketsRange(50e-6, 10, 18)

func newMetrics(ladder Ladder) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockladder_lock_wait_seconds",
			Help:    "Time from asking for the lock to holding it, per lock (acquisitions that got it).",
			Buckets: latencyBuckets,
		}, []string{"lock"}),
		acquired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockladder_lock_acquisitions_total",
			Help: "Acquisitions per lock and result: obtained, timeout (not had within the wait), unavailable (the back end failed or is not running).",
		}, []string{"lock", "result"}),
		section: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockladder_critical_section_seconds",
			Help:    "Time from holding the lock to sending its release, per lock.",
			Buckets: latencyBuckets,
		}, []string{"lock"}),
		released: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockladder_lock_release_failures_total",
			Help: "Releases that failed, per lock and reason: not_held (the lease had lapsed or another holder had the lock: the critical section may have overlapped another), error (the back end failed).",
		}, []string{"lock", "reason"}),
	}
	m.reg.MustRegister(m.wait, m.acquired, m.section, m.released, lockCounts{ladder},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// obtained records an acquisition of lock that took waited and ended
// with err.
func (m *metrics) obtained(lockName string, waited time.Duration, err error) {
	result := resultObtained
	switch {
	case err == nil:
		m.wait.WithLabelValues(lockName).Observe(waited.Seconds())
	case errors.Is(err, lock.ErrNotObtained):
		result = resultTimeout
	default:
		result = resultUnavailable
	}
	m.acquired.WithLabelValues(lockName, result).Inc()
}

// held records a critical section of lock that lasted d.
func (m *metrics) held(lockName string, d time.Duration) {
	m.section.WithLabelValues(lockName).Observe(d.Seconds())
}

// releaseFailed records a release of lock that failed with err (nil: it
// did not fail, nothing is counted). A lock that finds itself no longer
// held says so at its release, after the business wrote: the count is
// how a user sees a lease that lapsed (redislock's ErrLockNotHeld,
// redsync's ErrLockAlreadyExpired or ErrTaken).
func (m *metrics) releaseFailed(lockName string, err error) {
	switch {
	case err == nil:
		return
	case errors.Is(err, lock.ErrNotHeld):
		m.released.WithLabelValues(lockName, releaseNotHeld).Inc()
	default:
		m.released.WithLabelValues(lockName, releaseError).Inc()
	}
}

// lockCounts reports, at each scrape, the retries and handoffs of every
// lock of the ladder that counts them (lock.Counter): the locks keep the
// counts themselves, so the hot path pays one atomic add.
type lockCounts struct{ ladder Ladder }

var (
	retriesDesc = prometheus.NewDesc("lockladder_lock_retries_total",
		"Tries that did not get the lock (held, or a Redlock attempt won no majority), per lock that counts them.", []string{"lock"}, nil)
	handoffsDesc = prometheus.NewDesc("lockladder_lock_handoffs_total",
		"Locks given to the next waiter without a release and a new acquisition (fair's handoff, cohort's and redlock's passes, redlock's relays), per lock that counts them.", []string{"lock"}, nil)
)

func (c lockCounts) Describe(ch chan<- *prometheus.Desc) {
	ch <- retriesDesc
	ch <- handoffsDesc
}

func (c lockCounts) Collect(ch chan<- prometheus.Metric) {
	if c.ladder == nil {
		return
	}
	for _, name := range c.ladder.Names() {
		_, l, _ := c.ladder.Lookup(name)
		n, ok := l.(lock.Counter)
		if !ok {
			continue
		}
		got := n.Counts()
		ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(got.Retries), name)
		ch <- prometheus.MustNewConstMetric(handoffsDesc, prometheus.CounterValue, float64(got.Handoffs), name)
	}
}

// serve is GET /metrics, in Prometheus's text format.
func (m *metrics) serve() gin.HandlerFunc {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
}
