# lockladder: which Redis locks oversell, and what each fix costs.
#
#   make demo    bring the stack up, run the comparison, show the results
#   make test    run the tests

# Sizes and ports; override like `make bench N=1000 C=50`.
N         ?= 5000
C         ?= 100
STOCK     ?= 1000
INSTANCES ?= 3
LB_PORT   ?= 8080
APP_PORT  ?= 8081
REDIS_PORT ?= 6380
# CLUSTER=3: a Redis Cluster of 3 masters and 3 replicas from REDIS_PORT up
CLUSTER   ?=
LOCKS     ?=
WAIT      ?=
# SKUS=K: spread each run over K items, each judged on its own
SKUS      ?=
OUT       ?= results

GO      ?= go
BIN     := bin
STACK_FLAGS := -lb-port $(LB_PORT) -app-port $(APP_PORT) -redis-port $(REDIS_PORT) -instances $(INSTANCES) $(if $(CLUSTER),-cluster $(CLUSTER))
BENCH_FLAGS := -n $(N) -c $(C) -stock $(STOCK) -out $(OUT) $(if $(LOCKS),-locks $(LOCKS)) $(if $(WAIT),-wait $(WAIT)) $(if $(SKUS),-skus $(SKUS))

.PHONY: all build demo up down bench bench-check bench-baseline bench-regress bench-game matrix chaos explore bench-peers test test-loaded test-embedded test-ladder vet lint clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

## demo: start Redis, 3 app instances and a load balancer, benchmark every lock, show each rung's flaw
## under its scenario (each on a fresh stack), keep serving until Ctrl-C. Its throughput runs send
## DEMO_N requests each (1000: the tables within two minutes on two cores); make demo DEMO_N=5000 for
## the articles' full size. It builds only the two binaries it runs (bin/bench: make build)
DEMO_N    ?= 1000
demo:
	$(GO) build -o $(BIN)/ ./cmd/app ./cmd/stack
	$(BIN)/stack demo $(STACK_FLAGS) $(BENCH_FLAGS) -n $(DEMO_N)

## up / down: the same stack in the background
up: build
	$(BIN)/stack up $(STACK_FLAGS)

down: build
	$(BIN)/stack down

## bench: the comparison against a running stack (starts one if none answers)
bench: build
	$(BIN)/bench run $(STACK_FLAGS) $(BENCH_FLAGS)

## bench-check: what each rung costs, guarded like its verdicts: a short run of every rung on both
## endpoints on a fresh stack on free ports, each rung's throughput and p99 as ratios to atomic's in
## the same run, against the baseline committed in bench/cost/baseline.json; a rung past the bound
## fails, named with its figure, its baseline and the bound (bench/cost). bench-baseline rewrites the
## baseline from the median of BASELINE_RUNS checks: review its diff like code.
BASELINE_RUNS ?= 3
bench-check: build
	$(BIN)/bench check -out $(OUT) $(if $(LOCKS),-locks $(LOCKS))

bench-baseline: build
	$(BIN)/bench check -write -runs $(BASELINE_RUNS) -out $(OUT) -commit $(shell git rev-parse --short HEAD)

## bench-regress: the check's own test: bench check of an app built with e76382f's fix undone (the
## PostgreSQL rungs' heads sleep 100ms between tries, 30 times slower) must fail, naming them
## (.ci/bench-regress; REGRESS_LOCKS=pg-advisory,... to check only those rungs)
REGRESS_LOCKS ?=
bench-regress:
	REGRESS_LOCKS=$(REGRESS_LOCKS) .ci/bench-regress

## bench-game: the 50-move game as the page plays it (POST /play through nginx) on a stack of its
## own, while make bench's load runs through the same nginx: each move's answer at p50 and p99, per
## rung (GAME_LOCKS=check-del,fair to choose; docs/explore.md)
GAME_LOCKS ?=
bench-game:
	GAME_LOCKS=$(GAME_LOCKS) $(GO) test -count=1 -run '^$$' -bench 'BenchmarkGameThroughTheStack' -benchtime 3x -timeout 30m -v ./e2e

## matrix: every lock under each scenario that shows a rung's flaw, a grid of verdicts
## against the ladder's; each scenario on a fresh stack on free ports (never make up's)
SCENARIOS ?=
matrix: build
	$(BIN)/bench matrix -n $(N) -c $(C) -stock $(STOCK) -out $(OUT) $(if $(LOCKS),-locks $(LOCKS)) $(if $(SCENARIOS),-scenarios $(SCENARIOS))

## chaos: the fault suite: kill, drain, Redis stop, retry trap, failover, partition, random repeats;
## each fault on a fresh stack on free ports; a table of figures and results/chaos-*.{json,md}
FAULTS  ?=
REPEATS ?=
chaos: build
	$(BIN)/bench chaos -out $(OUT) $(if $(FAULTS),-faults $(FAULTS)) $(if $(REPEATS),-repeats $(REPEATS)) $(if $(LOCKS),-locks $(LOCKS))

## explore: search each Redis rung's interleavings (crashes, pauses, clock skew and time as choices)
## for the shortest that oversells or deadlocks, print it as a sequence diagram and replay it on a
## real redis-server (docs/explore.md); LOCKS=setnx,lua to choose (default EXPLORE_LOCKS), BUDGET=60s per rung
BUDGET  ?=
EXPLORE_LOCKS = setnx,setnx-expire,setnx-px,check-del,lua,del-setnx,getset,reentrant,redlock,fenced,fair,cohort,atomic,redsync,redislock,redislock-refresh,redsync-redlock
explore: build
	$(BIN)/bench explore -locks $(or $(LOCKS),$(EXPLORE_LOCKS)) $(if $(BUDGET),-budget $(BUDGET))

## bench-peers: redsync v4 (as peers calls it and as the lab's rung), bsm/redislock and the lab's
## locks, N ops of GET+SET at C concurrency against one redis-server started for the run, then the
## library rungs and lua, fair, cohort, atomic through nginx (3 instances), one table (peers/)
bench-peers: build
	cd peers && $(GO) run . -n $(N) -c $(C) -out $(abspath $(OUT)) -app $(abspath $(BIN)/app) \
		-nginx-conf $(abspath nginx.conf) -commit $(shell git rev-parse --short HEAD)

## test: vet, then every test (real servers when installed; required under CI=true). The
## packages' tests run under the race detector, PKG_LANES packages at a time: most of their time
## is spent waiting on leases, timeouts and servers starting, not on the two cores. The end-to-end
## tests run last, without it: their faults are timed against the machine (a killed instance's
## 502s, a lease running out), the instances they start are built without it anyway, and the
## packages' tests have run the same harness under it. There the suites with lanes of their own
## run first, alone: the matrix (TestMatrix) runs three scenarios' stacks at once, each
## scenario's locks one after the other on its own, and TestChaos two faults at once
## (docs/scenarios.md); then the tests on a stack of their own (lane(t) in e2e) E2E_LANES at a
## time. The explorer's tests run among the packages: each of their searches ends by its own
## bound (a depth, a verdict), not by its time, so it covers the same however loaded the machine.
## The end-to-end tests' files (the page's screenshot) are kept under $(OUT)/e2e/_artifacts.
## A step that fails repeats its failures at its end (.ci/failing), for logs cut in the middle.
## examples/checklock, a module of its own, checks its locks through lockcheck, the checker
## an engineer imports.
## The packages whose tests take longest go first (SLOW_PKGS, longest first, from `go test
## -json` timings; go list keeps them first and lists each package once): go test starts them
## in the order it is given, and alphabetical order left
## stack and suite, two of the longest, to start last and run on alone at the end.
PKG_LANES ?= 4
E2E_LANES ?= 2
RACE ?= -race
SLOW_PKGS := stack lock explore stack/backends lockcheck race suite handlers failover lock/libs cmd/stack
test: vet
	.ci/failing $(GO) test $(RACE) -p $(PKG_LANES) -count=1 -timeout 30m $$($(GO) list $(addprefix ./,$(SLOW_PKGS)) ./... | grep -v '/e2e$$')
	cd examples/checklock && $(GO) vet ./... && $(GO) test $(RACE) -count=1 -timeout 10m ./...
	mkdir -p $(OUT)/e2e
	.ci/failing $(GO) test -count=1 -timeout 30m -parallel $(E2E_LANES) -artifacts -outputdir $(abspath $(OUT))/e2e ./e2e

## test-loaded: make test beside two busy loops (sh -c 'while :; do :; done'), as on a loaded CI
## machine: a test that fails here waits on time where it should wait on a condition, or asserts
## a timing that belongs in a benchmark (.ci/busy stops the loops by pid however the run ends)
test-loaded:
	.ci/busy 2 $(MAKE) test

## test-embedded: make test as on a machine with only Go and make: LOCKLADDER_SERVERS=embedded
## hides every installed server and browser, so the stack uses its embedded fallbacks and the
## tests that need a real server skip and name it (CI=true is dropped: it would make them fail).
## CI runs it after make test, without the race detector (RACE=) to stay within its time:
## make test has run the same code under it.
test-embedded:
	env -u CI LOCKLADDER_SERVERS=embedded $(MAKE) test

## test-ladder: the page's "run the ladder" in Chromium on a stack with every back end installed, as
## make demo starts it: every pair the page offers there, each verdict the ladder's, within three
## minutes (make test runs it on the e2e stack, without ZooKeeper, etcd and MariaDB's pairs)
test-ladder:
	mkdir -p $(OUT)/e2e
	LOCKLADDER_LADDER=all $(GO) test -count=1 -timeout 10m -run 'TestPageRunsTheLadder$$' -v -artifacts -outputdir $(abspath $(OUT))/e2e ./e2e

vet:
	$(GO) vet ./...

lint: vet
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.6.1 ./...

clean:
	rm -rf $(BIN) .run
