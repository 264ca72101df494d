"""The command line every lab shares (`python -m infra.lab`, `python -m infra.zk_lab`, …):
start (detached), stop by recorded PID, status of every recorded process, a timing drill, and
whatever extra commands a lab adds."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class LabCli:
    prog: str
    description: str
    workdir: Path  # default --workdir
    recorded: str  # the key of pids.json that lists the lab's processes ("brokers", "nodes")
    start: Callable[[argparse.Namespace, Path], None]  # start detached and print what runs where
    drill: Callable[[Path], dict[str, Any]]  # a timed fault drill; its timings are printed as JSON
    status_line: Callable[[str, dict, Path, argparse.Namespace], str]  # one recorded process, now
    stop: Callable[[Path], list[int]]  # stop every recorded process (by PID, checked against /proc)
    add_arguments: Callable[[argparse.ArgumentParser], None] = lambda ap: None
    extra: dict[str, Callable[[argparse.Namespace, argparse.ArgumentParser], int]] = field(default_factory=dict)


def run(lab: LabCli, argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=lab.prog, description=lab.description)
    ap.add_argument("command", choices=["start", "stop", "status", "drill", *lab.extra])
    ap.add_argument("--workdir", type=Path, default=lab.workdir)
    lab.add_arguments(ap)
    args = ap.parse_args(argv)
    workdir = args.workdir.resolve()
    if args.command in lab.extra:
        return lab.extra[args.command](args, ap)
    if args.command == "drill":
        print(json.dumps(lab.drill(workdir), indent=2))
        return 0
    if args.command == "stop":
        pids = lab.stop(workdir)
        print(f"stopped pids {pids}" if pids else "nothing running")
        return 0
    if args.command == "status":
        try:
            recs = json.loads((workdir / "pids.json").read_text()).get(lab.recorded, {})
        except (OSError, ValueError):
            recs = {}
        if not recs:
            print("nothing recorded")
            return 1
        for name, rec in sorted(recs.items()):
            print(lab.status_line(name, rec, workdir, args))
        return 0
    lab.start(args, workdir)
    return 0
