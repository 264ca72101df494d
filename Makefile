# Two commands on a fresh machine (each installs whatever is missing first):
#   make demo   — real local drill: ActiveMQ master/slave failover, collected, analysed, told
#   make test   — the whole test suite (what CI runs)
PYTHON ?= python3

.PHONY: setup demo test test-fast drills bench

setup:
	@bash infra/setup.sh

demo: setup
	$(PYTHON) -m brokerscope demo

test: setup
	$(PYTHON) -m pytest -q

# development loop: everything except the real-JVM drills
test-fast:
	$(PYTHON) -m pytest -q -m "not slow"

# every real fault drill in the lab, scored against its ground truth (exit 1 below the bar)
drills: setup
	$(PYTHON) -m brokerscope drill all
