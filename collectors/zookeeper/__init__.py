"""ZooKeeper ensembles: server health over four-letter words / AdminServer, and the coordination
state brokers keep in ZooKeeper (the Artemis lock manager), read-only through kazoo.

    wire.py          one server: `srvr`, `mntr` (4lw) and `/commands/monitor` (AdminServer)
    coordination.py  read-only kazoo snapshots of watched znodes
    parse.py         pure: raw answers → silver zk_server_state / zk_coordination rows
    collector.py     the live loops (per ensemble), bronze_zk rows, envelope validation

Recording sources: `zk.4lw` (command + raw text), `zk.admin` (the JSON body), `zk.znode`
(a snapshot: path, data base64, stat, children per znode).
"""

from collectors.zookeeper.collector import ZkCollector, bronze_zk_row, ensemble_of, ensembles, validate_zk_envelope
from collectors.zookeeper.wire import SOURCE_4LW, SOURCE_ADMIN, SOURCE_ZNODE

SOURCES = (SOURCE_4LW, SOURCE_ADMIN, SOURCE_ZNODE)

__all__ = ["SOURCES", "ZkCollector", "bronze_zk_row", "ensemble_of", "ensembles", "validate_zk_envelope"]
