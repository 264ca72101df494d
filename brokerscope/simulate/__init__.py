"""`brokerscope simulate`: recordings of realistic broker, ZooKeeper and GC traffic with chosen
faults, and the ground truth beside them; `score` replays one and measures the findings against it.

    model.py      members (JVMs) over true time: roles, outages, pauses, traffic
    scenarios.py  fault injectors → a Scenario and its truth
    jolokia.py    a simulated Jolokia agent answering the packs' own bulk requests
    activemq.py, artemis.py, kafka.py, weblogic.py   per-kind MBean registries (CATALOG facts)
    zookeeper.py  `srvr` / `mntr` answers and lock-manager znode snapshots
    gclog.py      JDK unified-logging GC lines, in the tailer's envelopes
    render.py     scenario → recording.jsonl.gz, truth.json, brokerscope.yaml
    score.py      replay + analyze, then recall / precision / boundary error per finding type
"""

from brokerscope.simulate.scenarios import SCENARIOS, ScenarioError, Spec, build

__all__ = ["SCENARIOS", "ScenarioError", "Spec", "build"]
