# Two commands on a fresh machine (each installs whatever is missing first):
#   make demo   — real local drill: ActiveMQ master/slave failover, collected, analysed, told
#   make test   — the whole test suite (what CI runs)
PYTHON ?= python3

.PHONY: setup demo test test-fast drills bench

setup:
	@bash infra/setup.sh

demo: setup
	$(PYTHON) -m brokerscope demo

# Two tiers: the tests that start no lab JVM in two workers (a file stays in one worker: its
# module fixtures are built once), then the lab tests one at a time — two broker pairs, ZooKeeper
# ensembles or drills at once on two cores starve each other's timing. Exit 1 if either fails.
test: setup
	@status=0; \
	$(PYTHON) -m pytest -q -m "not slow" -n 2 --dist loadfile || status=1; \
	$(PYTHON) -m pytest -q -m slow || status=1; \
	exit $$status

# development loop: everything except the real-JVM drills
test-fast:
	$(PYTHON) -m pytest -q -m "not slow"

# every real fault drill in the lab, scored against its ground truth (exit 1 below the bar)
drills: setup
	$(PYTHON) -m brokerscope drill all
