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

# One run, two workers (one Spark start each). Every lab test (real brokers, ZooKeeper, Kafka,
# PostgreSQL, Prometheus) is in one xdist group, so labs run one at a time on one worker while the
# other worker runs the rest beside them; every other file stays in one worker (its module fixtures
# are built once). Groups go out longest first (tests/group_durations.json), so both workers end
# together (tests/xdist_groups.py). The lab drills are built to hold with a core kept busy.
test: setup
	$(PYTHON) -m pytest -q -n 2 --dist loadgroup

# development loop: everything except the real-JVM drills
test-fast:
	$(PYTHON) -m pytest -q -m "not slow" -n 2 --dist loadgroup

# every real fault drill in the lab, scored against its ground truth (exit 1 below the bar)
drills: setup
	$(PYTHON) -m brokerscope drill all
