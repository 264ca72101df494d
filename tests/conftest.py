"""Shared fixtures. Spark: one local session for the whole run (tests/spark_fixtures.py)."""

from tests.spark_fixtures import spark  # noqa: F401
