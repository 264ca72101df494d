"""analysis.frames.cached: the frames are cached inside the block and unpersisted when it ends, also
when it ends with an error or a return (the path that leaked in `skews_increment`)."""

import pytest

from analysis.frames import cached


def _cached_ids(spark) -> set[int]:
    return {int(k) for k in spark.sparkContext._jsc.getPersistentRDDs().keys()}


def test_frames_are_cached_inside_and_unpersisted_after(spark):
    before = _cached_ids(spark)
    a, b = spark.range(5), spark.range(7)
    with cached(a, b) as (ca, cb):
        assert ca.count() == 5 and cb.count() == 7
        assert ca.storageLevel.useMemory and cb.storageLevel.useMemory
        assert len(_cached_ids(spark) - before) == 2
    assert _cached_ids(spark) == before
    assert not a.storageLevel.useMemory


def test_an_error_or_a_return_inside_still_unpersists(spark):
    before = _cached_ids(spark)
    with pytest.raises(RuntimeError):
        with cached(spark.range(3)) as df:
            df.count()
            raise RuntimeError("a write failed")
    assert _cached_ids(spark) == before

    def early() -> int:
        with cached(spark.range(4)) as df:
            return df.count()
    assert early() == 4 and _cached_ids(spark) == before
