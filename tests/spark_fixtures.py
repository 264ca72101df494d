"""Shared Spark fixture: one local SparkSession for the whole test run.

Use it from a test module with ``from tests.spark_fixtures import spark  # noqa``.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from lakehouse.spark import spark_session

    session = spark_session("brokerscope-tests", conf={"spark.default.parallelism": "2"})
    yield session
    session.stop()
