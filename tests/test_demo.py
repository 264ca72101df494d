"""`brokerscope demo` (README's first command): the real kill-master drill end to end, as a user runs it."""

from __future__ import annotations

import re

import pytest

from brokerscope.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.lab, pytest.mark.drill]


def test_demo_reconstructs_the_failover_and_tails_the_gc_logs(tmp_path, capsys):
    assert main(["demo", "--workdir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"amq-\w became master — failover amq-\w → amq-\w", out), out
    checks = [line for line in out.splitlines() if line.startswith(("✓", "✗"))]
    assert len(checks) == 3 and all(c.startswith("✓") for c in checks), out
    m = re.search(r"GC: both brokers' gc.log, tailed while scraping: (\d+) pauses", out)
    assert m and int(m.group(1)) > 0, out  # the JVMs' startup collections at least
    assert "next: brokerscope timeline --config" in out


def test_demo_on_an_artemis_pair_meets_the_drills_bar(tmp_path, capsys):
    """`brokerscope demo --broker artemis`: a real Artemis shared-store pair, kill, takeover, failback."""
    assert main(["demo", "--broker", "artemis", "--workdir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"art-\w became \w+ — failover art-\w → art-\w", out), out
    assert "drill artemis-kill: PASS" in out, out
    assert "next: brokerscope timeline --config" in out
