import pytest
import yaml

from settings import ConfigError, config_from_dict, load_config, parse_duration


def good(**over):
    d = {
        "lakehouse": "./lh",
        "scrape_interval": "500ms",
        "targets": [{"name": "amq-a", "kind": "activemq", "url": "http://127.0.0.1:8778/jolokia", "group": "store-1"}],
    }
    d.update(over)
    return d


def test_minimal_contract_parses():
    cfg = config_from_dict(good())
    assert cfg.scrape_interval == 0.5
    t = cfg.targets[0]
    assert (t.name, t.kind, t.group, t.verify_tls) == ("amq-a", "activemq", "store-1", True)
    assert t.effective_origin == "http://127.0.0.1:8778"


@pytest.mark.parametrize("text,seconds", [("5s", 5), ("500ms", 0.5), ("2m", 120), ("1h", 3600), (3, 3), ("1.5s", 1.5)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


def test_errors_name_key_and_fix():
    bad = good(targets=[
        {"name": "a", "kind": "rabbitmq", "url": "http://x/jolokia"},
        {"name": "b", "kind": "activemq", "url": "ftp://x"},
        {"name": "c", "kind": "activemq", "url": "http://x", "pasword": "oops"},
    ], scrape_interval="soon")
    with pytest.raises(ConfigError) as e:
        config_from_dict(bad, "cfg.yaml")
    msg = str(e.value)
    assert "cfg.yaml" in msg
    assert "targets[0].kind" in msg and "activemq, artemis, kafka, weblogic, zookeeper" in msg
    assert "targets[1].url" in msg and "http://" in msg
    assert "targets[2].pasword" in msg and "unknown key" in msg
    assert "scrape_interval" in msg and "500ms" in msg


@pytest.mark.parametrize("kind, name, says", [
    ("activemq", "prod:east", "copy the value as its Broker MBean shows it"),
    ("activemq", "a,b", "cannot appear in activemq's MBean names"),
    ("weblogic", "ms=1", "cannot appear in weblogic's MBean names"),
    ("artemis", "bad\x1b[31m", "control characters"),
    ("artemis", " ", "empty"),
    ("kafka", "p1", "no meaning for kind kafka"),
    ("zookeeper", "zk1", "no meaning for kind zookeeper"),
])
def test_broker_name_that_cannot_match_is_rejected_at_load(kind, name, says):
    url = "zk://127.0.0.1:2181" if kind == "zookeeper" else "http://x/jolokia"
    with pytest.raises(ConfigError, match="targets\\[0\\].*broker_name") as e:
        config_from_dict(good(targets=[{"name": "a", "kind": kind, "url": url, "broker_name": name}]), "cfg.yaml")
    assert says in str(e.value) and "\x1b" not in str(e.value)


@pytest.mark.parametrize("kind, name", [("activemq", "amq-east"), ("activemq", "amq-*"), ("artemis", "prod:east, 2"),
                                        ("weblogic", "ms1"), ("kafka", "*")])
def test_broker_names_the_brokers_can_register_load(kind, name):
    cfg = config_from_dict(good(targets=[{"name": "a", "kind": kind, "url": "http://x/jolokia", "broker_name": name}]))
    assert cfg.targets[0].broker_name == name


def test_duplicate_names_rejected():
    t = {"name": "a", "kind": "activemq", "url": "http://x/j"}
    with pytest.raises(ConfigError, match="used twice"):
        config_from_dict(good(targets=[t, t]))


def test_password_only_from_env_or_file(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="password"):
        config_from_dict(good(targets=[{"name": "a", "kind": "activemq", "url": "http://x/j", "password": "secret"}]))
    pw = tmp_path / "pw"
    pw.write_text("s3cret\n")
    cfg = config_from_dict(good(targets=[
        {"name": "a", "kind": "activemq", "url": "http://x/j", "username": "u", "password_file": str(pw)},
        {"name": "b", "kind": "activemq", "url": "http://x/j", "username": "u", "password_env": "BS_TEST_PW"},
    ]))
    assert cfg.targets[0].password() == "s3cret"
    with pytest.raises(ConfigError, match="BS_TEST_PW"):
        cfg.targets[1].password()
    monkeypatch.setenv("BS_TEST_PW", "envpw")
    assert cfg.targets[1].password() == "envpw"


def test_yaml_errors_and_relative_lakehouse(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("lakehouse: ./lh\ntargets: [\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_config(p)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    p.write_text("lakehouse: ./lh\nscrape_interval: 1s\ntargets: []\n")
    assert load_config(p).lakehouse_root() == str(tmp_path / "lh")


def test_gc_section_defaults_and_per_target_overrides(tmp_path):
    cfg = config_from_dict(good())
    assert (cfg.gc.zk_session_ms, cfg.gc.connection_ttl_ms, cfg.gc.max_line_bytes) == (18000, 60000, 65536)
    t = {"name": "a", "kind": "activemq", "url": "http://x/j", "gc_logs": ["logs/gc.log*"],
         "gc": {"connection_ttl_ms": 30000}}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(good(targets=[t], gc={"time_share_window": "2m", "time_share_pct": 25})))
    cfg = load_config(p)
    assert cfg.gc_thresholds(cfg.targets[0]) == {
        "zk_session_ms": 18000.0, "connection_ttl_ms": 30000.0, "time_share_window_s": 120.0, "time_share_pct": 25.0}
    assert cfg.gc_thresholds()["connection_ttl_ms"] == 60000.0
    assert cfg.gc_log_patterns(cfg.targets[0]) == [str(tmp_path / "logs" / "gc.log*")]  # relative to the file
    assert cfg.gc_state_file() == tmp_path / "lh" / "_state" / "gc_tail.json"
    with pytest.raises(ConfigError, match="gc.state_file"):
        config_from_dict(good(lakehouse="s3://bucket/lh")).gc_state_file()


def test_gc_errors_name_key_and_fix():
    bad = good(
        gc={"zk_session_ms": -1, "time_share_pct": 150, "time_share_window": "soon", "max_line_bytes": 10, "tail": 1},
        targets=[{"name": "a", "kind": "activemq", "url": "http://x/j", "gc_logs": [" "],
                  "gc": {"connection_ttl_ms": 0, "session_ms": 1}}],
    )
    with pytest.raises(ConfigError) as e:
        config_from_dict(bad, "cfg.yaml")
    msg = str(e.value)
    assert "gc.zk_session_ms" in msg and "greater than 0" in msg
    assert "gc.time_share_pct" in msg and "less than or equal to 100" in msg
    assert "gc.time_share_window" in msg and "500ms" in msg
    assert "gc.max_line_bytes" in msg
    assert "gc.tail" in msg and "unknown key" in msg
    assert "targets[0].gc_logs" in msg and "gc.log*" in msg
    assert "targets[0].gc.connection_ttl_ms" in msg
    assert "targets[0].gc.session_ms" in msg and "unknown key" in msg


def test_analysis_section_defaults_and_errors():
    cfg = config_from_dict(good())
    assert (cfg.analysis.stuck.threshold, cfg.analysis.stuck.forward_delays) == (60.0, {})
    assert (cfg.analysis.lag.lag_threshold, cfg.analysis.lag.replica_sync_grace, cfg.analysis.lag.window) == (60.0, 60.0, 10)
    cfg = config_from_dict(good(analysis={"stuck": {"threshold": "2m", "forward_delays": {"SystemModule!OrdersQueue": "30s"}},
                                          "lag": {"lag_threshold": "500ms", "follower_lag_messages": 50}}))
    assert (cfg.analysis.stuck.threshold, cfg.analysis.stuck.forward_delays) == (120.0, {"SystemModule!OrdersQueue": 30.0})
    assert (cfg.analysis.lag.lag_threshold, cfg.analysis.lag.follower_lag_messages) == (0.5, 50)
    bad = good(analysis={"stuck": {"threshold": "soon", "forward_delays": {"Q": 0}},
                         "lag": {"window": 1, "min_complete": 2, "max_extrapolation": -1, "lagg": 1}, "stuk": {}})
    with pytest.raises(ConfigError) as e:
        config_from_dict(bad, "cfg.yaml")
    msg = str(e.value)
    assert "analysis.stuck.threshold" in msg and "500ms" in msg
    assert "analysis.stuck.forward_delays" in msg and "greater than zero" in msg
    assert "analysis.lag.window" in msg and "greater than or equal to 2" in msg
    assert "analysis.lag.min_complete" in msg and "analysis.lag.max_extrapolation" in msg
    assert "analysis.lag.lagg" in msg and "analysis.stuk" in msg and "unknown key" in msg
