import pytest

from brokerscope.config import ConfigError, config_from_dict, load_config, parse_duration


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
