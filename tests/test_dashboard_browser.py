"""The dashboard in real headless Chromium (Debian chromium + chromium-driver, through selenium), on a
lakehouse made by replaying recordings and running the real analysis (`brokerscope analyze`):

* the real ActiveMQ drill (SIGKILL of the master), tests/fixtures/drill_kill_master.jsonl.gz;
* an Artemis split brain from `brokerscope simulate split-brain` (group pair-1, art-a/art-b), whose
  ground truth (truth.json) the windows on screen are checked against;
* a second Artemis split brain built with the capture builders of
  tests/fixtures/artemis/make_captures.py (targets cap-a/cap-b, grouped by NodeID), with an XSS
  payload as the name of a queue nobody consumes;
* G1 logs of the drill's brokers (amq-a, amq-b) written for the drill's minute and tailed into
  bronze_gc_lines, for the GC view's pauses.

What a person would see is asserted: overview → incident → report, the split-brain window's start
and end, the instance names, the narrative; screenshots are kept (pytest tmp dir, and
$BROKERSCOPE_ARTIFACTS when set)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from analysis.runner import analyze
from brokerscope.cli import main
from collectors.gc.tailer import GcTailer
from collectors.replay import replay
from dashboards import data as D
from dashboards.app import DashboardServer, create_app
from dashboards.figures import esc, stamp
from lakehouse.store import Lakehouse
from settings import config_from_dict
from tests.fixtures.artemis import make_captures as mk

pytestmark = pytest.mark.slow

FIX = Path(__file__).parent / "fixtures"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
XSS_QUEUE = "<img src=x onerror=window.__xss=1>"
SPLIT_GROUP = "pair-1"  # brokerscope simulate split-brain
XSS_GROUP = mk.SPLIT_NODE_ID  # no group configured for cap-a/cap-b: the Artemis NodeID is the group
NO_INCIDENTS = ("gold table `incidents` was not produced by `brokerscope analyze`: the incidents job "
                "(analysis/incidents.py, wired into analysis/runner.py) has not landed yet")


def split_brain_with_xss_queue() -> list[dict]:
    """make_captures' split brain (two Artemis brokers with one NodeID both live), as targets cap-a
    and cap-b, plus a queue on cap-a whose name is an XSS payload, holding messages nobody consumes
    (FirstMessageAge rising)."""
    jolokia, out = mk.Jolokia2(), []
    for i in range(mk.SPLIT_STEPS):
        a, b = mk.split_pair(i)
        a.queues.append(mk.Queue("audit", XSS_QUEUE, "anycast", 25, 0, 0, first_age_ms=600_000 + 1000 * i))
        ta = mk.T1 + timedelta(seconds=i, milliseconds=mk.A_OFFSET_MS)
        tb = mk.T1 + timedelta(seconds=i, milliseconds=mk.B_OFFSET_MS)
        out.append(mk.exchange(jolokia, "cap-a", ta, a.registry(ta), 8.0))
        out.append(mk.exchange(jolokia, "cap-b", tb, b.registry(tb), 8.5))
    return out


DRILL_START = datetime(2026, 11, 22, 0, 5, 55, tzinfo=timezone.utc)  # the drill recording's first second
GC_PAUSES = {"amq-a": [4.0, 9.5, 130.0, 6.0, 12.0, 5.5], "amq-b": [3.0, 7.0, 8.5, 45.0]}  # ms, young (no finding)


def g1_log(start: datetime, pauses_ms: list[float], every_s: float = 1.5) -> str:
    """A JDK 17 unified G1 log (decorators time, uptime, level, tags) with these young pauses."""
    def logged(t: datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}+0000"

    lines = [f"[{logged(start)}][0.004s][info][gc] Using G1"]
    for i, ms in enumerate(pauses_ms):
        up = 0.5 + i * every_s
        t, end = start + timedelta(seconds=up), start + timedelta(seconds=up, milliseconds=ms)
        lines += [f"[{logged(t)}][{up:.3f}s][info][gc,start    ] GC({i}) Pause Young (Normal) (G1 Evacuation Pause)",
                  (f"[{logged(end)}][{up + ms / 1000:.3f}s][info][gc          ] GC({i}) Pause Young (Normal) "
                   f"(G1 Evacuation Pause) {60 + i}M->{20 + i}M(256M) {ms:.3f}ms")]
    return "\n".join(lines) + "\n"


def tail_gc_logs(cfg) -> None:
    """Every configured gc_logs file into bronze_gc_lines, once (the analysis parses them)."""
    stop = threading.Event()
    stop.set()
    with GcTailer(cfg) as t:
        t.run(stop)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    """`brokerscope simulate split-brain --kind artemis`: recording, truth.json, brokerscope.yaml."""
    out = tmp_path_factory.mktemp("sim") / "split-brain"
    assert main(["simulate", "split-brain", "--kind", "artemis", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def truth(simulated) -> dict:
    (window,) = json.loads((simulated / "truth.json").read_text())["split_brain"]
    return window


@pytest.fixture(scope="module")
def lakehouse(tmp_path_factory, simulated, spark) -> Lakehouse:
    root = tmp_path_factory.mktemp("dash")
    recording = root / "split_brain_xss.jsonl.gz"
    mk.write(recording, split_brain_with_xss_queue())
    drill = yaml.safe_load((FIX / "drill_kill_master.yaml").read_text())
    sim = yaml.safe_load((simulated / "brokerscope.yaml").read_text())
    capture = [{"name": n, "kind": "artemis", "url": f"http://{n}.example:8161/console/jolokia"} for n in ("cap-a", "cap-b")]
    for t in drill["targets"]:
        (root / f"{t['name']}-gc.log").write_text(g1_log(DRILL_START, GC_PAUSES[t["name"]]))
        t["gc_logs"] = [str(root / f"{t['name']}-gc.log")]
    cfg = config_from_dict({**drill, "lakehouse": str(root / "lh"), "targets": drill["targets"] + sim["targets"] + capture})
    tail_gc_logs(cfg)
    assert replay(cfg, FIX / "drill_kill_master.jsonl.gz").new_rows == 38
    assert replay(cfg, simulated / "recording.jsonl.gz").new_rows > 0
    assert replay(cfg, recording).new_rows == 2 * mk.SPLIT_STEPS
    analyze(cfg, spark=spark)
    return Lakehouse(cfg.lakehouse_root())


@pytest.fixture(scope="module")
def server(lakehouse):
    with DashboardServer(create_app(D.Gold(lakehouse)), "127.0.0.1", 0) as srv:
        yield srv


def start_chromium(tz: str | None = None):
    """Headless Chromium through chromedriver; `tz`: the browser's time zone (its TZ variable)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("Debian chromium and chromium-driver are required (apt-get install chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1900"):
        opts.add_argument(a)
    env = {**os.environ, **({"TZ": tz} if tz else {})}
    return webdriver.Chrome(service=Service(CHROMEDRIVER, env=env), options=opts)


@pytest.fixture
def browser():
    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()


def wait_text(driver, css: str, contains: str = "", timeout: float = 30.0) -> str:
    """The text of the first element matching css once it contains `contains`. An element the page
    replaced between finding and reading it (Dash re-renders, a link navigates) is looked up again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            els = driver.find_elements(By.CSS_SELECTOR, css)
            if els:
                last = els[0].text
                if contains in last:
                    return last
        except StaleElementReferenceException:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{css!r} never showed {contains!r} within {timeout} s; last text: {last!r}")


def wait_js(driver, script: str, ok, timeout: float = 30.0):
    """The value of a script once ok(value) holds."""
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        last = driver.execute_script(script)
        if ok(last):
            return last
        time.sleep(0.2)
    raise AssertionError(f"{script!r} never satisfied the check within {timeout} s; last value: {last!r}")


def keep_screenshot(driver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 10_000
    if os.environ.get("BROKERSCOPE_ARTIFACTS"):
        dest = Path(os.environ["BROKERSCOPE_ARTIFACTS"])
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest / path.name)
    return path


def incident_of(lakehouse: Lakehouse, predicate) -> dict:
    if not lakehouse.exists("incidents"):
        pytest.skip(NO_INCIDENTS)
    found = [r for r in lakehouse.read("incidents").to_pylist() if predicate(r)]
    assert found, f"no such incident among {[r['title'] for r in lakehouse.read('incidents').to_pylist()]}"
    return found[0]


def test_overview_shows_every_group_now(server, browser, lakehouse, tmp_path):
    browser.get(server.url + "/")
    groups = wait_text(browser, "#groups", "cap-a")
    # the drill's pair: amq-b took over and stayed master; the captured split brain: both live at the end
    assert "live: amq-b" in groups and "amq-a: slave" in groups
    assert "live: cap-a, cap-b (more than one live!)" in groups and XSS_GROUP in groups and SPLIT_GROUP in groups
    # recorded in the past: no card may claim to know the state now; each says how old its data is
    states = browser.execute_script(CARDS_JS)
    assert {s for _, s, _ in states} == {"unknown"}, states
    assert all(r.startswith("no data for ") for _, _, r in states), states
    keep_screenshot(browser, tmp_path, "dashboard-overview")


CARDS_JS = """return Array.from(document.querySelectorAll('.group-card')).map(
    c => [c.dataset.group, c.dataset.state, c.querySelector('.reason').innerText]);"""


def last_observation(lakehouse: Lakehouse, group: str) -> datetime:
    t = lakehouse.read("broker_state", columns=["group_name", "ts"]).to_pylist()
    return max(r["ts"] for r in t if r["group_name"] == group)


@pytest.mark.parametrize("group, state, reason", [
    ("store-1", "ok", "live amq-b, backup amq-a waiting"),  # the drill's end: amq-b took over, amq-a came back as slave
    (XSS_GROUP, "failing", "split brain: cap-a and cap-b both live"),
])
def test_overview_state_just_after_the_recording(lakehouse, browser, group, state, reason):
    """With the clock pinned a second after a group's last observation, its card tells its state."""
    now = last_observation(lakehouse, group) + timedelta(seconds=1)
    with DashboardServer(create_app(D.Gold(lakehouse, clock=lambda: now)), "127.0.0.1", 0) as srv:
        browser.get(srv.url + "/")
        wait_text(browser, "#groups", group)
        got = {g: (s, r) for g, s, r in browser.execute_script(CARDS_JS)}
    assert got[group] == (state, reason)


def iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_overview_to_split_brain_incident_to_report(server, browser, lakehouse, truth, tmp_path):
    from selenium.webdriver.common.by import By

    inc = incident_of(lakehouse, lambda r: r["has_split_brain"] and r["cluster"] == SPLIT_GROUP)
    (w,) = [w for w in lakehouse.read("split_brain_windows").to_pylist() if w["group_name"] == SPLIT_GROUP]
    # the gold window against the simulation's ground truth: observed both-active points lie inside
    # the true window, and the possible window (to the neighbouring scrapes) covers it
    assert iso(truth["start"]) <= w["certain_start"] < w["certain_end"] <= iso(truth["end"])
    assert w["possible_start"] <= iso(truth["start"]) and iso(truth["end"]) <= w["possible_end"]
    start, end = stamp(w["certain_start"]), stamp(w["certain_end"])

    browser.get(server.url + "/")
    wait_text(browser, "#incident-list", inc["title"])
    browser.find_element(By.LINK_TEXT, inc["title"]).click()  # client-side navigation to the incident
    assert wait_text(browser, "#incident-title", inc["title"]) == inc["title"]
    assert wait_text(browser, "#incident-instances", "art-a") == "art-a, art-b"
    narrative = wait_text(browser, "#narrative", "art-b")
    assert narrative.splitlines() == [p for p in inc["narrative"].splitlines() if p.strip()]  # the gold narrative, as is
    windows = wait_text(browser, "#windows", "split brain")
    assert f"certain {start} → {end}" in windows and "art-a + art-b" in windows
    wait_text(browser, "#timeline .legend", "split brain (certain)")  # the figure's legend, rendered
    legend = browser.find_element(By.CSS_SELECTOR, "#timeline").text
    assert "split brain (certain)" in legend and "split brain (possible)" in legend and "active (observed)" in legend
    ticks = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#timeline .yaxislayer-above .ytick text")]
    assert {"art-a", "art-b"} <= set(ticks)
    assert "split_brain_windows" in wait_text(browser, "#evidence", "split_brain_windows")
    keep_screenshot(browser, tmp_path, "dashboard-incident-split-brain")

    # time-range selection: "± 1 h" redraws the figure server-side for that range
    before = browser.execute_script("return document.querySelector('#timeline .js-plotly-plot').layout.xaxis.range")
    browser.find_element(By.XPATH, "//div[@id='range-choice']//label[normalize-space()='± 1 h']").click()
    deadline = time.monotonic() + 30
    while browser.execute_script("return document.querySelector('#timeline .js-plotly-plot').layout.xaxis.range") == before:
        assert time.monotonic() < deadline, "the time range never changed"
        time.sleep(0.1)
    lo, hi = browser.execute_script("return document.querySelector('#timeline .js-plotly-plot').layout.xaxis.range")
    hour = timedelta(hours=1)
    assert (lo[:19], hi[:19]) == ((inc["start_ts"] - hour).strftime("%Y-%m-%dT%H:%M:%S"),
                                  (inc["end_ts"] + hour).strftime("%Y-%m-%dT%H:%M:%S")), (lo, hi)  # incident ± 1 h

    browser.find_element(By.ID, "report-html").click()
    assert wait_text(browser, "#title", inc["title"]).endswith(inc["title"])
    assert f"certain {start} → {end}" in wait_text(browser, "#windows")
    assert "art-a" in browser.find_element(By.ID, "summary").text
    wait_text(browser, "#figure .legend", "split brain (certain)")  # the embedded figure renders offline
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources == [], f"the report loaded {resources}: it must be self-contained"
    keep_screenshot(browser, tmp_path, "dashboard-report-split-brain")


def test_drill_failover_incident_names_both_masters(server, browser, lakehouse, tmp_path):
    inc = incident_of(lakehouse, lambda r: r["has_failover"] and "amq-a" in (r["instances"] or ""))
    browser.get(server.url + "/incident/" + inc["incident_id"])
    windows = wait_text(browser, "#windows", "amq-a → amq-b")
    assert "failover amq-a → amq-b" in windows
    # the state bars: amq-a master, then not answering (SIGKILL), then back as slave (standby)
    wait_text(browser, "#timeline .legend", "state: standby")
    runs = browser.execute_script("""return document.querySelector('#timeline .js-plotly-plot').data
        .filter(t => t.name && t.name.startsWith('state: '))
        .flatMap(t => t.y.map((y, i) => [y, t.name, t.base[i]]));""")
    amq_a = [name for _, name, _ in sorted((r for r in runs if r[0] == "amq-a"), key=lambda r: r[2])]
    assert amq_a[:1] == ["state: active"] and "state: not answering" in amq_a, amq_a
    gone = amq_a.index("state: not answering")
    assert "state: standby" in amq_a[gone:], amq_a
    keep_screenshot(browser, tmp_path, "dashboard-incident-drill")



def test_a_typed_incident_url_is_drawn_from_the_layout_without_a_callback(server, browser, lakehouse):
    """A typed (or reloaded) incident URL: the page comes with /_dash-layout, so nothing waits for a
    callback round trip before the first paint; in-app navigation away and back still renders."""
    from selenium.webdriver.common.by import By

    inc = incident_of(lakehouse, lambda r: r["has_split_brain"] and r["cluster"] == SPLIT_GROUP)
    browser.get(server.url + "/incident/" + inc["incident_id"])
    assert wait_text(browser, "#incident-title", inc["title"]) == inc["title"]
    wait_text(browser, "#timeline .legend", "split brain (certain)")
    calls = browser.execute_script("return performance.getEntriesByType('resource')"
                                   ".filter(e => e.name.includes('_dash-update-component')).map(e => e.name)")
    assert calls == [], f"the first view waited for {len(calls)} callback(s)"
    # Plotly kept the figure's margins: it did not draw it a second time to grow one
    size, margin = browser.execute_script("const gd = document.querySelector('#timeline .js-plotly-plot'); "
                                          "return [gd._fullLayout._size, gd.layout.margin];")
    assert {k: round(size[k]) for k in "lrtb"} == {k: margin[k] for k in "lrtb"}, (size, margin)
    browser.find_element(By.LINK_TEXT, "Overview").click()
    wait_text(browser, "#incident-list", inc["title"])
    browser.back()  # back to the page the layout held: rendered again by the callback
    assert wait_text(browser, "#incident-title", inc["title"]) == inc["title"]
    wait_text(browser, "#timeline .legend", "split brain (certain)")


def test_xss_payload_in_a_queue_name_is_shown_as_text(server, browser, lakehouse, tmp_path):
    """The payload is in the stuck-messages view, the incident's narrative and evidence, and the report."""
    from selenium.webdriver.common.by import By

    stuck = [r for r in lakehouse.read("stuck_messages").to_pylist() if r["destination"] == XSS_QUEUE]
    assert stuck, "the analysis found no stuck-message finding for the payload queue"
    browser.get(server.url + "/stuck")
    assert XSS_QUEUE in wait_text(browser, "#findings", XSS_QUEUE)
    assert not browser.find_elements(By.CSS_SELECTOR, "#findings img")
    assert browser.execute_script("return window.__xss") is None, "the payload ran on /stuck"
    keep_screenshot(browser, tmp_path, "dashboard-xss-as-text")
    ev = [r for r in lakehouse.read("incident_evidence").to_pylist() if r["source_id"] == stuck[0]["finding_id"]] \
        if lakehouse.exists("incident_evidence") else []
    for r in ev[:1]:
        for path, css in ((f"/incident/{r['incident_id']}", "#evidence"), (f"/incident/{r['incident_id']}", "#narrative"),
                          (f"/report/{r['incident_id']}.html", "body")):
            browser.get(server.url + path)
            assert XSS_QUEUE in wait_text(browser, css, XSS_QUEUE)
            assert not browser.find_elements(By.CSS_SELECTOR, f"{css} img")
            assert browser.execute_script("return window.__xss") is None, f"the payload ran on {path}"


def test_incident_timeline_in_the_browsers_own_time_zone_with_a_typed_range(server, lakehouse, tmp_path):
    """A browser in New York (UTC-5 in November) picks its own zone: the axis, the hover text and a
    typed from/until are New York wall-clock times; the data is the same."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    inc = incident_of(lakehouse, lambda r: r["has_failover"] and "amq-a" in (r["instances"] or ""))
    start = datetime.fromisoformat(str(inc["start_ts"])).replace(tzinfo=None) if not isinstance(
        inc["start_ts"], datetime) else inc["start_ts"].replace(tzinfo=None)
    driver = start_chromium("America/New_York")
    try:
        driver.get(server.url + "/incident/" + inc["incident_id"])
        wait_text(driver, "#timeline .legend", "state: standby")
        axis = "return document.querySelector('#timeline .js-plotly-plot').layout"
        assert driver.execute_script(axis + ".xaxis3.title.text;") == "time (UTC)"
        driver.find_element(By.XPATH, "//*[@id='zone-choice']//label[contains(., 'browser')]").click()
        zone = driver.execute_script("return Intl.DateTimeFormat().resolvedOptions().timeZone;")
        assert zone == "America/New_York", zone
        wait_js(driver, axis + ".xaxis3.title.text;", lambda t: t == "time (America/New_York)")
        lo, hi = start - timedelta(hours=5, seconds=3), start - timedelta(hours=5) + timedelta(seconds=7)
        for field, value in (("range-from", lo), ("range-until", hi)):
            box = driver.find_element(By.ID, field)
            box.send_keys(value.strftime("%Y-%m-%d %H:%M:%S"), Keys.ENTER)
        wanted = [lo.strftime("%Y-%m-%dT%H:%M:%S"), hi.strftime("%Y-%m-%dT%H:%M:%S")]  # what was typed, in ISO form
        wait_js(driver, axis + ".xaxis.range;", lambda shown: [r[:19] for r in shown] == wanted)
        hover = driver.execute_script("""return document.querySelector('#timeline .js-plotly-plot').data
            .filter(t => t.name === 'state: standby').map(t => t.hovertext[0])[0];""")
        assert "America/New_York" in hover and "UTC" not in hover
        assert driver.find_element(By.ID, "range-error").text == ""
        keep_screenshot(driver, tmp_path, "dashboard-incident-new-york")
    finally:
        driver.quit()


TRACE_POINTS_JS = """return Object.fromEntries(document.querySelector(arguments[0] + ' .js-plotly-plot').calcdata
    .map(c => [c[0].trace.name, c.filter(p => p.y !== undefined && !Number.isNaN(p.y)).map(p => p.y)]));"""


def pick(driver, dropdown: str, text: str) -> None:
    """Choose an option of a dcc.Dropdown as a person does: type it, press Enter."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.find_element(By.CSS_SELECTOR, f"#{dropdown} input").send_keys(text + Keys.ENTER)


def test_the_gc_view_plots_each_jvms_pauses_and_filters_by_group_and_time(server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(server.url + "/gc")
    wait_text(browser, "#gc-figure .legend", "amq-b pause")
    points = browser.execute_script(TRACE_POINTS_JS, "#gc-figure")
    assert points["amq-a pause"] == GC_PAUSES["amq-a"] and points["amq-b pause"] == GC_PAUSES["amq-b"]
    assert len(points["amq-a heap after GC"]) == len(GC_PAUSES["amq-a"])
    keep_screenshot(browser, tmp_path, "dashboard-gc-pauses")
    pick(browser, "f-group", "store-1")  # the drill's pair: its brokers, by broker_state
    wait_text(browser, "#gc-figure .legend", "amq-a pause")
    assert set(browser.execute_script(TRACE_POINTS_JS, "#gc-figure")) == {
        "amq-a pause", "amq-a heap after GC", "amq-b pause", "amq-b heap after GC"}
    browser.find_element(By.ID, "f-since").send_keys("2026-11-22T00:05:59Z" + Keys.ENTER)  # the last pauses only
    wait_text(browser, "#gc-figure .legend", "amq-a pause")
    deadline = time.monotonic() + 30
    while browser.execute_script(TRACE_POINTS_JS, "#gc-figure").get("amq-a pause") != GC_PAUSES["amq-a"][3:]:
        assert time.monotonic() < deadline, browser.execute_script(TRACE_POINTS_JS, "#gc-figure")
        time.sleep(0.1)
    browser.find_element(By.ID, "f-until").send_keys("2026-11-22T00:05:59.5Z" + Keys.ENTER)  # no pause then
    assert "No stop-the-world pause" in wait_text(browser, "#gc-figure-note", "pause")


def test_the_destinations_view_plots_depth_and_consumers_and_shows_names_as_text(server, browser, lakehouse, tmp_path):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/destinations")
    wait_text(browser, "#destinations-figure .legend")
    pick(browser, "d-group", XSS_GROUP)
    label = f"{XSS_QUEUE} (queue) on cap-a"
    wait_text(browser, "#destinations-figure .legend", label)
    points = browser.execute_script(TRACE_POINTS_JS, "#destinations-figure")  # trace names: escaped for Plotly
    assert points[esc(label)] == [25] * mk.SPLIT_STEPS and points[esc(label) + " consumers"] == [0] * mk.SPLIT_STEPS
    assert label in wait_text(browser, "#d-destinations", label)  # the picker: text too
    assert not browser.find_elements(By.CSS_SELECTOR, "#destinations-page img")
    assert browser.execute_script("return window.__xss") is None, "the payload ran on /destinations"
    keep_screenshot(browser, tmp_path, "dashboard-destinations")
