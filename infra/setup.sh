#!/usr/bin/env bash
# brokerscope: idempotent setup of a fresh Debian (12) machine for the real ActiveMQ lab.
#
#   sudo infra/setup.sh            # or as root; PYTHON=/path/to/python3 to pick the interpreter
#
# 1. apt: activemq openjdk-17-jdk-headless, maven, prometheus,
#    prometheus-alertmanager, chromium + chromium-driver (dashboard browser tests), postgresql +
#    libpostgresql-jdbc-java (lease split-brain drill),
#    zookeeper and libservlet-api-java (the ZooKeeper lab's AdminServer needs servlet-api.jar) (apt-get update only
#    when something is missing)
# 2. make sure the Debian activemq service is stopped and disabled (the lab starts its own JVMs; a
#    system broker would hold 61616/8161)
# 3. pip install -e '.[test]' when this checkout's package or a test dependency is not importable
# 4. fetch with Maven, once, checksum-verified, into ~/.cache/brokerscope (BROKERSCOPE_CACHE): the
#    Kafka 4.3.1 jars (brokers, Connect, MirrorMaker 2, tools; infra.kafka_lab runs from them), the
#    Apache Artemis 2.40.0 distribution (unpacked for infra.artemis_lab) and the official Jolokia
#    2.6.0 JVM agent (every lab JVM without a Jolokia of its own loads it, read-only: infra/jvm_agents.py)
#    (python -m infra.artifacts); then compile the lab's Core JMS failover client against the
#    distribution's client jars (infra.core_clients.build_core_clients; no network)
# 5. fetch with Maven, once, checksum-verified, into the same cache: delta-spark's jars for Spark
#    (io.delta:delta-spark_4.2_2.13:4.4.0 and what it needs beyond pyspark/jars; python -m infra.delta_jars)
# Fast no-op when everything is in place.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
PACKAGES=(activemq openjdk-17-jdk-headless maven zookeeper libservlet-api-java
          prometheus prometheus-alertmanager chromium chromium-driver postgresql libpostgresql-jdbc-java)

say() { printf '[setup] %s\n' "$*"; }

SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
fi

# ---------------------------------------------------------------- 1. Debian packages
missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
        missing+=("$pkg")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" != "0" ] && [ -z "$SUDO" ]; then
        say "missing packages: ${missing[*]} - run this script as root"; exit 1
    fi
    say "installing: ${missing[*]}"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    say "packages present: ${PACKAGES[*]}"
fi

# ---------------------------------------------------------------- 2. no system ActiveMQ service
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    if systemctl is-active --quiet activemq 2>/dev/null; then
        say "stopping system activemq service"
        $SUDO systemctl stop activemq || true
    fi
    if systemctl is-enabled --quiet activemq 2>/dev/null; then
        say "disabling system activemq service"
        $SUDO systemctl disable activemq >/dev/null 2>&1 || true
    fi
elif [ -x /etc/init.d/activemq ]; then
    if ls /var/run/activemq/*.pid >/dev/null 2>&1; then
        say "stopping system activemq (init.d)"
        $SUDO /etc/init.d/activemq stop || true
    fi
    if ls /etc/rc[2-5].d/S*activemq >/dev/null 2>&1 && command -v update-rc.d >/dev/null 2>&1; then
        say "disabling system activemq (update-rc.d)"
        $SUDO update-rc.d activemq disable >/dev/null 2>&1 || true
    fi
fi
# The Debian init script only runs instances linked into /etc/activemq/instances-enabled (empty by
# default); report (do not touch) any that are enabled.
if [ -d /etc/activemq/instances-enabled ] && [ -n "$(ls -A /etc/activemq/instances-enabled 2>/dev/null)" ]; then
    say "note: /etc/activemq/instances-enabled is not empty: $(ls /etc/activemq/instances-enabled | tr '\n' ' ')"
fi

# ---------------------------------------------------------------- 3. Python package
cd "$REPO_ROOT"
# Installed (editable) from THIS checkout? Ask from / so the current directory cannot answer for it.
installed_at="$(cd / && "$PYTHON" -c 'import os, brokerscope, pyspark, deltalake, pytest, xdist, hypothesis, jsonschema, cryptography, selenium, confluent_kafka; print(os.path.dirname(os.path.dirname(os.path.abspath(brokerscope.__file__))))' 2>/dev/null || true)"
if [ "$installed_at" = "$REPO_ROOT" ] && command -v brokerscope >/dev/null 2>&1; then
    say "python package installed from this checkout ($("$PYTHON" --version 2>&1))"
else
    say "pip install -e '.[test]' (this checkout: $REPO_ROOT)"
    "$PYTHON" -m pip install -q --disable-pip-version-check -e '.[test]'
fi

# ---------------------------------------------------------------- 3b. native GC parser core
# Rust/PyO3 (native/gcparse), built by maturin through pip's build isolation; rebuilt only when
# the installed module was not built from this source (hash of its sources, see build.rs).
want="$("$PYTHON" native/gcparse/tools/source_hash.py)"
have="$(cd / && "$PYTHON" -c 'import brokerscope_gcparse as b; print(b.SOURCE_HASH)' 2>/dev/null || true)"
if [ "$want" = "$have" ]; then
    say "native GC parser core up to date ($have)"
elif command -v cargo >/dev/null 2>&1; then
    say "pip install ./native/gcparse (source $want, installed: ${have:-none})"
    CARGO_BUILD_JOBS=2 "$PYTHON" -m pip install -q --disable-pip-version-check ./native/gcparse
else
    say "note: no cargo: the GC parser runs on its Python implementation"
fi

# ---------------------------------------------------------------- 4. Kafka jars, Artemis distribution, Jolokia JVM agent
"$PYTHON" -m infra.artifacts | while read -r line; do say "$line"; done
say "Core JMS client: $("$PYTHON" -c 'from infra.core_clients import build_core_clients; print(build_core_clients())')"

# ---------------------------------------------------------------- 5. delta-spark jars (native Delta on Spark)
delta_jar_list="$("$PYTHON" -m infra.delta_jars)"
say "delta-spark jars: $(dirname "$(printf '%s\n' "$delta_jar_list" | head -1)") ($(printf '%s\n' "$delta_jar_list" | wc -l) jars)"
say "done"
