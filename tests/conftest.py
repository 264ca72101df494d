"""Shared fixtures. Spark: one local session for the whole run (tests/spark_fixtures.py).

Hypothesis runs derandomized by default, so a test run is reproducible and CI cannot fail on an
example it never saw before; `HYPOTHESIS_PROFILE=explore pytest …` searches with fresh random
examples (how the fuzz tests find new bugs)."""

import os

from hypothesis import settings

from tests.spark_fixtures import nothing_left_cached, spark  # noqa: F401

settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --- scheduling under xdist (`make test`: -n 2 --dist loadgroup; tests/xdist_groups.py) ---------------------

import pytest  # noqa: E402

from tests import xdist_groups  # noqa: E402


def pytest_addoption(parser):
    xdist_groups.add_options(parser)


def pytest_configure(config):
    xdist_groups.start(config)


def pytest_unconfigure(config):
    xdist_groups.finish(config)


@pytest.hookimpl(tryfirst=True)  # before xdist tells the controller that collection is done
def pytest_collection_finish(session):
    xdist_groups.write_groups(session)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadgroup":
        return xdist_groups.GroupScheduling(config, log)
    return None


# --- the committed recordings, each analysed once --------------------------------------------------------------

import shutil  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

_FIX = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class AnalysedDrill:
    """tests/fixtures/drill_kill_master.jsonl.gz replayed into a fresh lakehouse and analysed once
    (`analysed_recordings`; `analyze` on a fresh lakehouse: no watermark yet, so every job takes its
    full path — the same rows as `analyze --full`). `root` is shared by every test that asks for it:
    never write to it; `copy_to` gives a test a lakehouse of its own, in the state the analysis left it."""

    data: dict  # the drill's config (tests/fixtures/drill_kill_master.yaml), lakehouse → root
    root: Path
    counts: dict

    def copy_to(self, dest: Path, **overrides):
        """A copy of the analysed lakehouse at `dest`; its Config (`data` | overrides, lakehouse → dest)."""
        from settings import config_from_dict

        shutil.copytree(self.root, dest)
        return config_from_dict({**self.data, **overrides, "lakehouse": str(dest)})


@pytest.fixture(scope="session")
def analysed_recordings(tmp_path_factory, spark):
    """Each committed recording analysed once for the session, on first use (tests/recordings.py
    `Analyses`); never write into one."""
    from tests.recordings import Analyses

    analyses = Analyses(tmp_path_factory, spark)
    yield analyses
    written = analyses.written()
    assert not written, f"a test wrote into the shared analysed lakehouse of {written} (copy it first)"


@pytest.fixture(scope="session")
def analysed_kill_master(analysed_recordings):
    import yaml

    drill = analysed_recordings(_FIX / "drill_kill_master.jsonl.gz")
    root = Path(drill.lh.root)
    data = {**yaml.safe_load((_FIX / "drill_kill_master.yaml").read_text()), "lakehouse": str(root)}
    return AnalysedDrill(data=data, root=root, counts=drill.counts)


@dataclass(frozen=True)
class FullRerun:
    root: Path  # a copy of the analysed lakehouse, then `analyze --full` over it
    said: list  # that rerun's progress messages
    counts: dict


@pytest.fixture(scope="session")
def kill_master_rerun_in_full(analysed_kill_master, tmp_path_factory, spark):
    """`analyze(full=True)` over a copy of `analysed_kill_master` (once for the session; never write
    to it): what a `--full` rerun of an analysed lakehouse gives."""
    from analysis.runner import analyze

    cfg = analysed_kill_master.copy_to(tmp_path_factory.mktemp("kill-master-rerun-full") / "lh")
    said: list[str] = []
    counts = analyze(cfg, spark=spark, progress=said.append, full=True)
    return FullRerun(root=Path(cfg.lakehouse_root()), said=said, counts=counts)


@pytest.fixture(scope="session")
def artemis_in_full(tmp_path_factory, spark):
    """The Artemis captures (tests/test_incremental.py `artemis()`) replayed whole, the spine and
    stuck jobs run --full over them (stuck threshold: test_incremental_findings.py's), once for the
    session: the full run the incremental tests compare with. Its Lakehouse; never write to it."""
    from tests.test_incremental import artemis
    from tests.test_incremental_findings import ARTEMIS_STUCK_THRESHOLD, spine_and_stuck_in_full

    return spine_and_stuck_in_full(artemis, ARTEMIS_STUCK_THRESHOLD, tmp_path_factory.mktemp("artemis-in-full"), spark)
