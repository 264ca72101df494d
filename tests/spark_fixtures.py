"""Shared Spark fixture: one local SparkSession for the whole test run.

Use it from a test module with ``from tests.spark_fixtures import spark  # noqa``.
"""

from __future__ import annotations

import pytest

DELTA_STATE_CACHE = "Delta Table State"  # "#n - <log>", "with Stats #n - <log>"


@pytest.fixture(scope="session")
def spark():
    from lakehouse.spark import spark_session

    session = spark_session("brokerscope-tests", conf={"spark.default.parallelism": "2"})
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def nothing_left_cached():
    """Every test leaves the shared session as it found it: no dataset still cached. A cached plan
    pins its data and the hash tables of its broadcast joins in the driver until it is unpersisted;
    code that caches without unpersisting on every path (an error path, an early return) leaks them
    for the life of the session — in the suite, and in `brokerscope run`, whose session lives for
    months (analysis.frames.cached). CI once ran out of driver memory building a broadcast this way."""
    yield
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        return
    # Delta's own snapshot caches ("Delta Table State …") belong to its DeltaLog cache, which
    # uncaches them when it drops a table's log (bounded: lakehouse/spark_session.py)
    left = [rdd for rdd in spark.sparkContext._jsc.getPersistentRDDs().values()
            if not str(rdd.name()).startswith(DELTA_STATE_CACHE)]
    if not left:
        return
    names = sorted(str(rdd.name())[:160] for rdd in left)
    spark.catalog.clearCache()  # the next test starts clean either way
    for rdd in left:
        rdd.unpersist(False)
    pytest.fail(f"the test left {len(names)} dataset(s) cached in the shared Spark session: {names[:3]}", pytrace=False)
