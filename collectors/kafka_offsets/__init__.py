"""Failover readiness of Kafka consumer groups replicated by MirrorMaker 2, read with the Kafka
protocol (confluent-kafka): committed offsets on the primary, translated ones on DR (synced group
offsets and MM2's checkpoints), log offsets on both — nothing of it is in JMX.

    checkpoint.py  pure: MirrorMaker 2 Checkpoint records (key and value bytes) → fields
    client.py      one round's calls to both clusters, each an exchange that never raises
    collector.py   the live loop per replication, bronze_kafka rows, envelope validation
    parse.py       pure: bronze_kafka rows → silver kafka_offsets facts

Recording sources: `kafka.groups`, `kafka.committed`, `kafka.checkpoints`, `kafka.log_offsets`
(target: the replication's name).
"""

from collectors.kafka_offsets.client import SOURCES
from collectors.kafka_offsets.collector import BRONZE_TABLE, KafkaOffsetsCollector, bronze_kafka_row, validate_kafka_envelope

__all__ = ["BRONZE_TABLE", "KafkaOffsetsCollector", "SOURCES", "bronze_kafka_row", "validate_kafka_envelope"]
