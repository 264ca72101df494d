"""`brokerscope drill NAME|all|artemis-all|kafka-all [--workdir DIR] [--interval S]`: real fault drills
scored against their own ground truth (brokerscope.drills). Registered by brokerscope.cli."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from brokerscope.drills import DRILLS, drill_module, run_drill
from brokerscope.drills.common import say
from infra.lab import LabError


def add_parser(sub) -> None:

    lines = "\n".join(f"  {n:<22} {summary(drill_module(n), n)}" for n in DRILLS)
    sp = sub.add_parser(
        "drill", help="run a real fault drill in the local lab and score the analysis against its ground truth",
        description=f"drills:\n{lines}\n  {'all':<22} every drill in turn; exit 1 if one misses the bar"
                    + "".join(f"\n  {g + '-all':<22} every {g}-… drill in turn" for g in FAMILIES),
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter,
    )
    sp.add_argument("name", choices=[*DRILLS, "all", *(f"{g}-all" for g in FAMILIES)], metavar="NAME",
                    help="drill to run, all, or a family: " + ", ".join(f"{g}-all" for g in FAMILIES))
    sp.add_argument("--workdir", default="./var/drills", help="where each drill's lab, lakehouse, recording, "
                    "ground_truth.json and report.json go (one folder per drill)")
    sp.add_argument("--interval", type=float, default=0.5, help="scrape interval in seconds (default 0.5)")
    sp.set_defaults(func=cmd_drill)


#: drill families runnable together as `<family>-all` (the drills whose name starts with `<family>-`)
FAMILIES = ("artemis", "kafka", "zk")


def selected(name: str) -> list[str]:
    """The drills `name` stands for: one drill, every drill (`all`), or a family (`artemis-all`)."""
    if name == "all":
        return list(DRILLS)
    if name.endswith("-all") and name[:-4] in FAMILIES:
        return [d for d in DRILLS if d.startswith(name[:-3])]
    return [name]


def summary(mod, name: str) -> str:
    return getattr(mod, "SUMMARIES", {}).get(name, mod.SUMMARY)


def cmd_drill(args) -> int:

    if args.interval <= 0:
        print(f"error: --interval must be positive seconds, not {args.interval}", file=sys.stderr)
        return 2
    names = selected(args.name)
    base = Path(args.workdir).resolve()
    results = {name: run_one(name, base / name, args.interval) for name in names}
    if len(names) > 1:
        print_summary(results)
        base.mkdir(parents=True, exist_ok=True)
        (base / "summary.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    return 0 if all(r["passed"] for r in results.values()) else 1


def run_one(name: str, workdir: Path, interval: float) -> dict:
    """One drill; a lab that cannot start is reported as a failed drill with its error, not a traceback."""

    say(f"=== drill {name} → {workdir}")
    try:
        card = run_drill(name, workdir, interval)
    except (LabError, TimeoutError, RuntimeError) as e:
        why = str(e) or f"{type(e).__name__} (no message)"  # a future's timeout says nothing of itself
        print(f"drill {name}: ERROR — the drill itself could not run:\n{why}", file=sys.stderr)
        return {"drill": name, "passed": False, "error": why}
    print(card.render(), flush=True)
    print(f"  report: {workdir / 'report.json'}", flush=True)
    return card.to_json()


def print_summary(results: dict[str, dict]) -> None:
    print("\n=== drills ===")
    width = max(map(len, results), default=0)
    for name, r in results.items():
        worst = max((abs(v) for v in r.get("boundary_errors_intervals", {}).values()), default=0.0)
        extra = f"worst boundary {worst:.2f} intervals" if "error" not in r else "could not run"
        print(f"{'PASS' if r['passed'] else 'FAIL'}  {name:<{width}} {extra}")
