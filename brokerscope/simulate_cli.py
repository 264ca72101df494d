"""`brokerscope simulate`: write a scenario's recording and ground truth, list scenarios, score one."""

from __future__ import annotations

import json
import sys

from brokerscope.simulate import SCENARIOS, ScenarioError, Spec, build
from brokerscope.simulate.render import write_scenario, write_suite
from brokerscope.simulate.scenarios import suite
from brokerscope.simulate.score import score_dir
from settings import parse_duration

KINDS = ("activemq", "artemis", "kafka", "weblogic")


def _spec(args):

    kind = args.kind or (SCENARIOS[args.scenario].kinds[0] if args.scenario in SCENARIOS else "activemq")
    interval = parse_duration(args.interval)
    duration = parse_duration(args.duration) if args.duration else 60 * interval
    return Spec(kind=kind, seed=args.seed, interval=interval, duration=duration,
                split_length=parse_duration(args.split_length) if args.split_length else None,
                skew=float(args.skew) if args.skew is not None else None, jolokia=args.jolokia)


def _list() -> int:

    width = max(map(len, SCENARIOS))
    for name, e in SCENARIOS.items():
        print(f"{name:<{width}}  {e.summary}  (kinds: {', '.join(e.kinds)})")
    return 0


def _score(directory: str, args) -> int:

    say = (lambda m: print(f"· {m}", file=sys.stderr)) if not args.quiet else None  # noqa: E731
    reports = score_dir(directory, lakehouse=args.lakehouse, progress=say)
    if args.format == "json":
        print(json.dumps([r.as_dict() for r in reports], indent=1))
    else:
        print("\n\n".join(r.text() for r in reports))
        if len(reports) > 1:
            failed = [f"{r.scenario} ({r.kind})" for r in reports if not r.passed]
            print(f"\n{len(reports) - len(failed)} of {len(reports)} scenarios meet the bar"
                  + (f"; below it: {', '.join(failed)}" if failed else ""))
    return 0 if all(r.passed for r in reports) else 1


def _write_all(args) -> int:
    """Every scenario for every kind it applies to, in one recording (one analysis scores them all)."""

    if not args.out:
        raise ScenarioError("where should the scenarios be written? add --out DIR")
    if args.kind:
        raise ScenarioError("`simulate all` writes every kind; leave out --kind")
    spec = _spec(args)
    scenarios = suite(spec)
    counts = write_suite(scenarios, args.out)
    print(f"{len(scenarios)} scenarios (seed {spec.seed}, every {spec.interval:g} s for {spec.duration:g} s): "
          f"{counts['envelopes']} envelopes → {args.out}/recording.jsonl.gz, truth.json, brokerscope.yaml")
    return _score(args.out, args) if args.score else 0


def cmd_simulate(args) -> int:

    try:
        if args.list:
            return _list()
        if args.scenario == "score":
            if not args.dir:
                raise ScenarioError("`brokerscope simulate score DIR`: give the folder a simulation was written to")
            return _score(args.dir, args)
        if not args.scenario:
            raise ScenarioError(f"name a scenario ({', '.join(SCENARIOS)}) or use --list")
        if args.scenario == "all":
            return _write_all(args)
        if args.scenario not in SCENARIOS:
            build(args.scenario, None)  # raises with the list of choices
        if not args.out:
            raise ScenarioError(f"where should scenario {args.scenario!r} be written? add --out DIR")
        spec = _spec(args)
        sc = build(args.scenario, spec)
        counts = write_scenario(sc, args.out)
        sources = ", ".join(f"{n} {s}" for s, n in sorted(counts["sources"].items()))
        print(f"{args.scenario} ({spec.kind}, seed {spec.seed}, every {spec.interval:g} s for {spec.duration:g} s): "
              f"{counts['envelopes']} envelopes ({sources}) → {args.out}/recording.jsonl.gz, truth.json, brokerscope.yaml")
        if args.score:
            return _score(args.out, args)
        return 0
    except (ScenarioError, FileExistsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def add_parser(sub) -> None:
    """Register `brokerscope simulate` on the `brokerscope` parser."""
    sp = sub.add_parser(
        "simulate", help="write a simulated incident (recording + ground truth), or score the analysis of one",
        description="brokerscope simulate SCENARIO|all --out DIR [options] | simulate --list | simulate score DIR")
    sp.add_argument("scenario", nargs="?", metavar="SCENARIO", help="a scenario (see --list), `all` (every scenario and kind in one recording), or `score`")
    sp.add_argument("dir", nargs="?", metavar="DIR", help="with `score`: the folder a simulation was written to")
    sp.add_argument("--list", action="store_true", help="list the scenarios and the kinds they apply to")
    sp.add_argument("--out", "-o", metavar="DIR", help="write recording.jsonl.gz, truth.json and brokerscope.yaml here")
    sp.add_argument("--kind", choices=KINDS, help="broker kind (default: the scenario's first)")
    sp.add_argument("--seed", type=int, default=1, help="random seed: the same seed gives the same files")
    sp.add_argument("--interval", default="1s", help="scrape interval (default 1s)")
    sp.add_argument("--duration", help="length of the run (default 60 intervals)")
    sp.add_argument("--split-length", help="split-brain: how long both are active (default 6 intervals)")
    sp.add_argument("--skew", help="clock-skew: the backup collector's clock offset in seconds (default −3.4 intervals)")
    sp.add_argument("--jolokia", type=int, choices=[1, 2], default=2,
                    help="answer shapes of Jolokia 1.x or 2.x (≥2.5 defaults; default 2)")
    sp.add_argument("--score", action="store_true", help="after writing, replay, analyze and score it")
    sp.add_argument("--lakehouse", help="score into this (new) lakehouse folder instead of a temporary one")
    sp.add_argument("--format", choices=["text", "json"], default="text", help="score report format")
    sp.add_argument("--quiet", "-q", action="store_true", help="no progress lines while scoring")
    sp.set_defaults(func=cmd_simulate)
