"""A committed recording (fixture config + captured exchanges) replayed into a fresh lakehouse and,
when a Spark session is given, analysed as `brokerscope analyze` does — the step most analysis tests
start from. `Analyses` does that once per test process for every test that only reads the result;
`group` puts those tests on one xdist worker, so that one analysis serves them all."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from collectors.replay import replay
from lakehouse.store import Lakehouse
from settings import config_from_dict

FIXTURES = (Path(__file__).parent / "fixtures").resolve()


def fixture_config(config_yaml: Path, lakehouse: Path | str):
    """The fixture's brokerscope.yaml with its lakehouse pointed at `lakehouse`."""
    data = yaml.safe_load(Path(config_yaml).read_text())
    data["lakehouse"] = str(lakehouse)
    return config_from_dict(data)


@dataclass
class Replayed:
    cfg: Any
    lh: Lakehouse
    result: Any  # collectors.replay's result: envelopes, new_rows
    counts: dict | None  # analyze()'s table counts, None when not analysed


def replayed(config_yaml: Path, recording: Path, lakehouse: Path, spark=None,
             before_analysis: Callable[[Lakehouse], None] | None = None) -> Replayed:
    """`recording` replayed with `config_yaml` into `lakehouse`, then (with `spark`) analysed;
    `before_analysis` seeds tables a test needs that no recording carries (e.g. GC findings)."""
    from analysis.runner import analyze  # deferred: pyspark is heavy to import

    cfg = fixture_config(config_yaml, lakehouse)
    result = replay(cfg, recording)
    lh = Lakehouse(cfg.lakehouse_root())
    if before_analysis is not None:
        before_analysis(lh)
    counts = analyze(cfg, spark=spark) if spark is not None else None
    return Replayed(cfg, lh, result, counts)


def config_of(recording: Path) -> Path:
    """A committed recording's own config: tests/fixtures/…/<stem>.jsonl.gz → <stem>.yaml."""
    return recording.with_name(recording.name.removesuffix(".jsonl.gz") + ".yaml")


def group(recording: Path) -> str:
    """The xdist group of the tests that read `recording`'s analysis (tests/fixtures/…/<stem>, with
    or without .jsonl.gz): tests in one group run on one worker, where `Analyses` analyses it once."""
    stem = str(Path(recording).resolve().relative_to(FIXTURES)).removesuffix(".jsonl.gz")
    return f"recording-{stem}"


class Analyses:
    """Each committed recording, asked for by its .jsonl.gz, replayed with its own config into a
    session temp folder and analysed in full (`replayed(config_of(recording), recording, …, spark)`)
    the first time a test asks for it, the same Replayed afterwards: an analysis costs 10-25 s,
    mostly Spark's fixed cost, and the tests that only read it need one per process (the session
    fixture `analysed_recordings`, tests/conftest.py). The lakehouse is shared by all of them: never
    write into it (the fixture fails the session if a file was added or removed); a test that writes
    replays its own (`replayed`) or copies the lakehouse first (as `AnalysedDrill.copy_to`)."""

    def __init__(self, tmp_path_factory, spark):
        self._tmp, self._spark = tmp_path_factory, spark
        self._done: dict[Path, Replayed] = {}
        self._files: dict[Path, list[Path]] = {}  # each lakehouse's files right after its analysis

    def __call__(self, recording: Path) -> Replayed:
        key = Path(recording).resolve()
        if key not in self._done:
            root = self._tmp.mktemp(f"analysed-{key.name.removesuffix('.jsonl.gz')}") / "lh"
            self._done[key] = replayed(config_of(key), key, root, self._spark)
            self._files[key] = files_under(root)
        return self._done[key]

    def lakehouse(self, recording: Path) -> Lakehouse:
        """The analysed lakehouse of `recording` (read only), checked to hold the replayed rows."""
        drill = self(recording)
        assert drill.result.new_rows > 0, f"{recording}: the replay wrote no row"
        return drill.lh

    def written(self) -> list[Path]:
        """The recordings whose shared lakehouse changed since its analysis (a test wrote into it)."""
        return [key for key, files in self._files.items() if files_under(self._done[key].lh.root) != files]


def files_under(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in Path(root).rglob("*"))
