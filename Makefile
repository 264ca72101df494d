# Two commands on a fresh machine (each installs whatever is missing first):
#   make demo   — real local drill: ActiveMQ master/slave failover, collected, analysed, told
#   make test   — the whole test suite (what CI runs)
PYTHON ?= python3

.PHONY: setup demo demo-artemis test test-fast drills bench

setup:
	@bash infra/setup.sh

demo: setup
	$(PYTHON) -m brokerscope demo

# the same on a real Artemis 2.40.0 shared-store pair (kill, takeover, failback), scored
demo-artemis: setup
	$(PYTHON) -m brokerscope demo --broker artemis

# Two tiers, each in two workers. First the tests marked neither slow nor lab (a file stays in one
# worker: its module fixtures are built once). Then the slow tier: every lab test (real brokers,
# ZooKeeper, Kafka, PostgreSQL, Prometheus) in one xdist group, so labs run one at a time on one
# worker, while the other worker runs the slow Spark/CPU tests beside them (tests/conftest.py
# assigns the groups) — the lab drills are built to hold with another process keeping a core busy.
test: setup
	@status=0; \
	$(PYTHON) -m pytest -q -m "not slow" -n 2 --dist loadfile || status=1; \
	$(PYTHON) -m pytest -q -m slow -n 2 --dist loadgroup || status=1; \
	exit $$status

# development loop: everything except the real-JVM drills
test-fast:
	$(PYTHON) -m pytest -q -m "not slow"

# every real fault drill in the lab, scored against its ground truth (exit 1 below the bar)
drills: setup
	$(PYTHON) -m brokerscope drill all
