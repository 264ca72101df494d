"""Shared fixtures. Spark: one local session for the whole run (tests/spark_fixtures.py).

Hypothesis runs derandomized by default, so a test run is reproducible and CI cannot fail on an
example it never saw before; `HYPOTHESIS_PROFILE=explore pytest …` searches with fresh random
examples (how the fuzz tests find new bugs)."""

import os

from hypothesis import settings

from tests.spark_fixtures import spark  # noqa: F401

settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
