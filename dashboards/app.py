"""The Dash app: overview → incident → report, and the finding views. It reads the lakehouse
through `dashboards.data` (delta-rs, no JVM) and computes no findings of its own.

    app = create_app(Gold(Lakehouse(root)), DashboardSettings())
    with DashboardServer(app, "127.0.0.1", 0) as srv:   # tests, bench
        print(srv.url)
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import dash
import flask
from dash import Input, Output, State, dcc, html
from werkzeug.serving import make_server

from collectors.text import printable
from dashboards import data as D
from dashboards import layout as L
from dashboards import readiness as R
from dashboards import series as S
from dashboards.clock import UTC_CLOCK, Clock
from dashboards.figures import destination_figure, gc_pause_figure, incident_timeline, lag_figure
from dashboards.overview import group_statuses
from dashboards.report import FORMATS, render
from lakehouse.store import Lakehouse, LakehouseError
from settings import parse_since
from settings.dashboard import DashboardAuth, DashboardSettings

RANGE_PAD = {"1h": timedelta(hours=1), "6h": timedelta(hours=6), "24h": timedelta(hours=24)}


# --- ranges -----------------------------------------------------------------------------------------------


def cluster_span(gold: D.Gold, cluster: str) -> tuple[datetime, datetime] | None:
    """First and last observed activity of a cluster (its role intervals and incidents)."""
    t = gold.optional("role_intervals", columns=["start_ts", "end_ts"], filter=f"group_name = {D.sql_literal(cluster)}")
    if t is None or t.num_rows == 0:
        return None
    return D.utc(min(t.column("start_ts").to_pylist())), D.utc(max(t.column("end_ts").to_pylist()))


def view_range(gold: D.Gold, inc: dict, choice: str | None) -> tuple[datetime, datetime]:
    start, end = D.default_range(inc)
    if choice in RANGE_PAD:
        return D.utc(inc["start_ts"]) - RANGE_PAD[choice], D.utc(inc["end_ts"]) + RANGE_PAD[choice]
    if choice == "all":
        span = cluster_span(gold, inc["cluster"])
        if span:
            return min(start, span[0] - timedelta(seconds=1)), max(end, span[1] + timedelta(seconds=1))
    return start, end


# Zoom and range-slider events → the "zoom" store, in the browser: only a new x range reaches the
# server (autosize and other relayout events would otherwise supersede an in-flight figure update).
ZOOM_FROM_RELAYOUT = """
function (r) {
  const none = window.dash_clientside.no_update;
  if (!r) return none;
  for (const ax of ['xaxis', 'xaxis2', 'xaxis3']) {
    if (r[ax + '.range[0]'] !== undefined) return [r[ax + '.range[0]'], r[ax + '.range[1]']];
    if (Array.isArray(r[ax + '.range'])) return r[ax + '.range'];
    if (r[ax + '.autorange']) return 'reset';
  }
  return none;
}
"""


def zoomed_range(zoom, clk: Clock = UTC_CLOCK) -> tuple[datetime, datetime] | None:
    """The x range of the zoom store ([lo, hi] as Plotly writes dates, wall-clock times of the
    clock's zone) in UTC; None for a reset."""
    if not isinstance(zoom, (list, tuple)) or len(zoom) != 2:
        return None
    try:
        return _plotly_time(zoom[0], clk), _plotly_time(zoom[1], clk)
    except (TypeError, ValueError):
        return None


def _plotly_time(text: str, clk: Clock) -> datetime:
    """Plotly date strings ('2026-11-23 11:00:03.5', no zone: the axis shows the clock's zone)."""
    return clk.to_utc(datetime.fromisoformat(str(text).replace(" ", "T").replace("Z", "")))


def typed_range(default: tuple[datetime, datetime], since: str | None, until: str | None,
                clk: Clock) -> tuple[datetime, datetime]:
    """The range typed into from/until (either may be empty: the default's end stays), in the
    clock's zone where a time has no offset. ValueError says what is wrong."""
    lo = parse_since(since or None, zone=clk.zone) or default[0]
    hi = parse_since(until or None, zone=clk.zone) or default[1]
    if lo >= hi:
        raise ValueError(f"'from' ({clk.stamp(lo)}) must be before 'until' ({clk.stamp(hi)})")
    return lo, hi


# The browser's own IANA time zone ('Europe/Berlin'), for "times in: my browser's time zone".
BROWSER_ZONE = """
function (_id) {
  try { return Intl.DateTimeFormat().resolvedOptions().timeZone || null; } catch (e) { return null; }
}
"""


def timeline_update(gold: D.Gold, incident_id: str, trigger: str | None, choice, zoom, since, until, clk: Clock):
    """(figure, error text, from, until) for the incident timeline's controls: a zoom wins, then a
    typed from/until, then the range buttons (choosing one clears what was typed)."""
    view = view_range(gold, D.incident(gold, incident_id), choice)
    if trigger == "range-choice":
        since = until = ""
    elif trigger == "zoom":
        view = zoomed_range(zoom, clk) or view
    elif since or until:
        try:
            view = typed_range(view, since, until, clk)
        except ValueError as e:
            return dash.no_update, f"time range: {e}", dash.no_update, dash.no_update
    return incident_figure(D.load_incident(gold, incident_id, view), clk), "", since, until


# --- pages ------------------------------------------------------------------------------------------------


def lakehouse_empty(gold: D.Gold) -> bool:
    return not any(gold.has(t) for t in ("broker_state", "role_intervals", "incidents", "zk_quorum", "gc_findings"))


def overview_page(gold: D.Gold, refresh_s: float = L.OVERVIEW_REFRESH_MS / 1000):
    if lakehouse_empty(gold):
        return L.message_page("No data yet", f"The lakehouse at {gold.root} has no tables yet. Collect or replay "
                                             "(brokerscope collect -c CFG / brokerscope replay -c CFG FILE), then run "
                                             "brokerscope analyze -c CFG.")
    return L.overview_layout(*overview_data(gold), refresh_ms=int(refresh_s * 1000))


def overview_data(gold: D.Gold) -> tuple[list[dict], list[dict] | None, D.MissingTable | None]:
    """Groups now (worst first), incidents, and the incidents table's absence if it is absent."""
    try:
        incidents, missing = D.incident_list(gold), None
    except D.MissingTable as e:
        incidents, missing = None, e
    return group_statuses(gold), incidents, missing


def refreshed_overview(gold: D.Gold):
    """The overview's body again, for its refresh timer (an error says so instead of a stale page)."""
    try:
        return L.overview_body(*overview_data(gold))
    except LakehouseError as e:
        return L.message_page("The lakehouse cannot be read", str(e))


def incident_figure(bundle: D.IncidentBundle, clk: Clock = UTC_CLOCK):
    return incident_timeline(bundle.timeline, bundle.incident["title"], clk)


def incident_page(gold: D.Gold, incident_id: str):
    bundle = D.load_incident(gold, incident_id)
    return L.incident_layout(bundle, incident_figure(bundle))


def gc_pause_block(gold: D.Gold, group=None, since=None, until=None):
    p = S.gc_pauses(gold, group, since, until, gold.max_points)
    return L.figure_or_note("gc-figure", None if p.note else gc_pause_figure(p), p.note)


def lag_block(gold: D.Gold, group=None, since=None, until=None):
    if not gold.has("replication_lag"):
        return L.figure_or_note("lag-figure", None, "No replication_lag table yet: brokerscope analyze -c CFG fills it.")
    series = D.lag_series(gold, group, since, until, gold.max_points)
    note = None if series else "No replication lag observed for this group and time range."
    return L.figure_or_note("lag-figure", None if note else lag_figure(series), note)


FIGURE_ABOVE = {"gc_findings": gc_pause_block, "replication_findings": lag_block}  # filtered with the table
MORE_GROUPS = {"gc_findings": S.gc_groups}  # groups the figure knows beyond the findings'


def view_content(gold: D.Gold, view: D.FindingView, group=None, since=None, until=None):
    found, total, _groups = D.finding_rows(gold, view, group, since, until)
    links = D.alert_incident_links(found) if view.table == "alert_history" else D.incident_of_findings(gold)
    table = L.findings_table(view, found, total, links)
    above = FIGURE_ABOVE.get(view.table)
    return [above(gold, group, since, until), table] if above else table


def view_page(gold: D.Gold, view: D.FindingView):
    _, _, groups = D.finding_rows(gold, view, limit=0)
    if view.table in MORE_GROUPS:
        groups = sorted(set(groups) | set(MORE_GROUPS[view.table](gold)))
    return L.findings_layout(view, groups, view_content(gold, view))


def destinations_content(d: S.DestinationSeries):
    return L.figure_or_note("destinations-figure", None if d.note else destination_figure(d), d.note)


def destinations_page(gold: D.Gold):
    if not gold.has("destination_stats"):
        raise D.MissingTable("destination_stats", gold.root)
    d = S.destination_series(gold, None, None, None, gold.max_points)
    return L.destinations_layout(S.destination_groups(gold), L.destination_options(d.ranked[:S.MAX_CHOICES]),
                                 d.chosen, destinations_content(d))


def refreshed_destinations(gold: D.Gold, group, since, until, chosen, keep_choice: bool):
    """(figure or note, picker options, picker value) for the filters; a new group or range picks
    the deepest again, a change of the picker keeps what was picked."""
    try:
        lo, hi = parse_since(since or None), parse_since(until or None)
    except ValueError as e:
        return html.P(f"time filter: {e}", id="filter-error"), dash.no_update, dash.no_update
    if not gold.has("destination_stats"):
        return L.missing_table_page(D.MissingTable("destination_stats", gold.root)), [], []
    d = S.destination_series(gold, group or None, lo, hi, gold.max_points, chosen if keep_choice else None)
    return destinations_content(d), L.destination_options(d.ranked[:S.MAX_CHOICES]), d.chosen


def readiness_content(gold: D.Gold, group=None, until=None):
    as_of = parse_since(until or None)
    return L.readiness_block(R.latest_readiness(gold, group or None, as_of),
                             f"at or before {as_of:%Y-%m-%d %H:%M:%S}Z" if as_of else "yet")


def readiness_page(gold: D.Gold):
    content = readiness_content(gold)  # MissingTable first: the page then says how to fill it
    return L.readiness_layout(R.readiness_groups(gold), content)


def refreshed_readiness(gold: D.Gold, group, until):
    try:
        return readiness_content(gold, group, until)
    except ValueError as e:
        return html.P(f"time filter: {e}", id="filter-error")
    except D.MissingTable as e:
        return L.missing_table_page(e)


def route(gold: D.Gold, path: str, refresh_s: float = L.OVERVIEW_REFRESH_MS / 1000):
    """The page for a URL path; missing tables and unknown ids become pages that say what to do."""
    path = path or "/"
    try:
        if path == "/":
            return overview_page(gold, refresh_s)
        if path.startswith("/incident/"):
            return incident_page(gold, unquote(path[len("/incident/"):]))
        if path in D.VIEW_BY_PATH:
            return view_page(gold, D.VIEW_BY_PATH[path])
        if path == L.DESTINATIONS:
            return destinations_page(gold)
        if path == L.READINESS:
            return readiness_page(gold)
        return L.message_page("Not found", f"There is no page {path}; use the links above.")
    except D.MissingTable as e:
        return L.missing_table_page(e)
    except D.NotFound as e:
        return L.message_page("Not found", str(e))
    except LakehouseError as e:
        return L.message_page("The lakehouse cannot be read", str(e))


# --- the first view in the layout -------------------------------------------------------------------------
#
# A typed or reloaded URL used to cost the browser a chain before the first paint: the page's HTML, its
# bundles, /_dash-layout (an empty shell), then a callback round trip on url.pathname that built the page.
# Now /_dash-layout carries the page itself: the layout is a function of the page's URL, which the
# browser sends as the Referer of that request (Referrer-Policy same-origin: never to another origin).
# The page's server side is started when its HTML is served (PagePrefetch), so it runs while the
# browser parses its bundles. An in-app link (dcc.Link: no reload) still goes through the callback.
# Without a usable Referer the layout is the empty shell and the callback renders the page, as before.

# url.pathname → page-request, in the browser: only a path the page does not already hold reaches the
# server (the layout's page, or the last one the callback rendered, is in page-path).
PAGE_REQUEST = """
function (pathname, rendered) {
  const none = window.dash_clientside.no_update;
  if (pathname === undefined || pathname === null || pathname === rendered) return none;
  return pathname;
}
"""


def referred_path(referer: str | None, host: str | None) -> str | None:
    """The path of the page that asked (the Referer of /_dash-layout), when it is this server's;
    None otherwise. A Referer trimmed to the origin by the browser gives "/": the overview is then
    rendered in the layout, and PAGE_REQUEST asks for the real page as soon as the URL is known."""
    if not referer or not host:
        return None
    try:
        u = urlsplit(referer)
    except ValueError:
        return None
    if u.scheme not in ("http", "https") or u.netloc.lower() != host.lower() or not u.path.startswith("/"):
        return None
    return u.path


def raw_request_path(request: flask.Request) -> str:
    """The request's path as the browser sent it (percent-encoded, as location.pathname)."""
    raw = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI")
    return raw.split("?", 1)[0] if raw and raw.startswith("/") else quote(request.path)


class PagePrefetch:
    """Pages whose server side started when their HTML was served, for the /_dash-layout request
    that follows within a second or two: at most `size` pending, each used once and only for `ttl_s`
    seconds (older: built again, so a layout never shows data older than that)."""

    def __init__(self, build, ttl_s: float = 10.0, size: int = 16):
        self._build = build
        self.ttl_s, self.size = ttl_s, size
        self._pending: OrderedDict[str, tuple[float, Future]] = OrderedDict()
        self._lock = threading.Lock()

    def _submit(self, path: str) -> Future:
        """The build in a thread of its own (it ends with the build, as the server's request threads do)."""
        fut: Future = Future()

        def run():
            try:
                fut.set_result(self._build(path))
            except BaseException as e:  # noqa: BLE001 - handed to the layout request, which raises it
                fut.set_exception(e)

        # not a daemon: a build still reading Delta (Rust, Arrow) when Ctrl-C ends the process would
        # be torn down mid-call by the interpreter's exit (a SIGSEGV, seen in
        # test_dashboard_serves_the_analysed_drill_until_ctrl_c); the exit waits for it instead
        threading.Thread(target=run, name="brokerscope-page", daemon=False).start()
        return fut

    def start(self, path: str) -> None:
        key = unquote(path)
        with self._lock:
            hit = self._pending.get(key)
            if hit is not None and time.monotonic() - hit[0] < self.ttl_s:
                return
            self._pending[key] = (time.monotonic(), self._submit(path))
            self._pending.move_to_end(key)
            while len(self._pending) > self.size:
                self._pending.popitem(last=False)

    def take(self, path: str):
        """The page for path: the prefetched one if fresh, else built now."""
        with self._lock:
            hit = self._pending.pop(unquote(path), None)
        if hit is not None and time.monotonic() - hit[0] < self.ttl_s:
            return hit[1].result()
        return self._build(path)


class BrokerscopeDash(dash.Dash):
    """dash.Dash whose HTML response starts the page's server side (PagePrefetch) for the layout."""

    prefetch: PagePrefetch | None = None

    def index(self, *args, **kwargs):
        if self.prefetch is not None:
            self.prefetch.start(raw_request_path(flask.request))
        return super().index(*args, **kwargs)


# Loaded with every page: plotly.js (parsed with the page, not after the first figure arrives) and
# the Graph's chunk. Every other lazy chunk (dropdown, date picker, markdown, mathjax, slider, upload,
# the data table's) loads when a page first uses it: 4.5 MB of JavaScript no incident page runs.
EAGER_SCRIPTS = ({"relative_package_path": "package_data/plotly.min.js", "namespace": "plotly"},
                 {"relative_package_path": "dcc/async-graph.js", "namespace": "dash"})


# --- auth -------------------------------------------------------------------------------------------------


def install_auth(server: flask.Flask, auth: DashboardAuth, password: str | None) -> None:
    """Basic auth or a trusted reverse-proxy header in front of every request (pages, callbacks,
    assets, reports); the response headers are install_guards'."""

    if auth.mode == "none":
        return
    nets = [ipaddress.ip_network(p, strict=False) for p in auth.trusted_proxies]
    expected = (password or "").encode()

    @server.before_request
    def _check():
        if auth.mode == "basic":
            a = flask.request.authorization
            if (a is not None and a.type == "basic" and a.password is not None
                    and hmac.compare_digest((a.username or "").encode(), auth.username.encode())
                    and hmac.compare_digest(a.password.encode(), expected)):
                return None
            return flask.Response("brokerscope: authentication required\n", 401,
                                  {"WWW-Authenticate": 'Basic realm="brokerscope", charset="UTF-8"'})
        try:
            remote = ipaddress.ip_address(flask.request.remote_addr or "")
        except ValueError:
            remote = None
        if remote is None or not any(remote in n for n in nets):
            return flask.Response("brokerscope: requests must come through the trusted reverse proxy "
                                  "(dashboard.auth.trusted_proxies)\n", 403)
        if not flask.request.headers.get(auth.proxy_header):
            return flask.Response(f"brokerscope: the reverse proxy did not authenticate this request "
                                  f"(no {auth.proxy_header} header)\n", 401)
        return None


def request_host(header: str) -> str:
    """The host name of a Host header, without the port, lower case ('[::1]:8050' → '::1')."""
    h = header.strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def install_guards(app: dash.Dash, allowed: set[str] | None) -> None:
    """A `Host` check (DNS rebinding) before every request, and headers after: a Content-Security-
    Policy that runs only our own scripts (Dash's inline ones by hash), no frames, no sniffing.
    Call after every clientside callback is defined (their hashes go into the policy)."""
    hashes = " ".join(app.csp_hashes())  # already quoted: 'sha256-…'
    page_csp = (f"default-src 'self'; script-src 'self' {hashes}; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
                "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
    # the HTML report is one self-contained file (plotly.js inline): inline only, nothing fetched
    report_csp = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
                  "font-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

    @app.server.before_request
    def _host():
        if allowed is not None and request_host(flask.request.host or "") not in allowed:
            return flask.Response(
                f"brokerscope: Host {printable(flask.request.host)[:100]!r} is not served here; open the dashboard by "
                f"{' or '.join(sorted(allowed))}, or list the name in dashboard.allowed_hosts\n", 421,
                mimetype="text/plain")
        return None

    @app.server.after_request
    def _headers(resp):
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("X-Frame-Options", "DENY")
        # same-origin: the page's own requests say which page asked (the layout is keyed by it, see
        # referred_path); no other origin ever learns a URL of the dashboard
        resp.headers.setdefault("Referrer-Policy", "same-origin")
        report = flask.request.path.startswith("/report/")
        resp.headers.setdefault("Content-Security-Policy", report_csp if report else page_csp)
        return resp


# --- the app ----------------------------------------------------------------------------------------------


def create_app(gold: D.Gold, settings: DashboardSettings | None = None, password: str | None = None,
               bind_host: str | None = None) -> dash.Dash:
    """`bind_host`: the address served (default: settings.host), for the Host check."""
    settings = settings or DashboardSettings()
    import pandas  # noqa: F401  deferred: pandas (heavy) loads when the server starts, not on its first request

    app = BrokerscopeDash(__name__, title="brokerscope", suppress_callback_exceptions=True, serve_locally=True,
                          update_title=None, eager_loading=False)
    for script in EAGER_SCRIPTS:
        app.scripts.append_script(script)

    def build_page(path: str):
        return L.shell(path or "/", route(gold, path, settings.overview_refresh))

    app.prefetch = PagePrefetch(build_page)

    def layout():
        """The page of the URL that asked for the layout, rendered in it (see PAGE_REQUEST)."""
        path = None
        if flask.has_request_context() and flask.request.path.endswith("_dash-layout"):
            path = referred_path(flask.request.headers.get("Referer"), flask.request.host)
        page = app.prefetch.take(path) if path else None
        return html.Div([dcc.Location(id="url"), dcc.Store(id="page-path", data=path), dcc.Store(id="page-request"),
                         html.Div(page, id="page")])

    app.layout = layout
    install_auth(app.server, settings.auth, password)

    @app.server.route("/report/<path:name>")
    def _report(name: str):
        incident_id, _, fmt = name.rpartition(".")
        if fmt not in FORMATS or not incident_id:
            return flask.Response(f"brokerscope: ask for /report/INCIDENT_ID.html or .md, not {name}\n", 404,
                                  mimetype="text/plain")
        try:
            text = render(D.load_incident(gold, incident_id), fmt)
        except (D.MissingTable, D.NotFound, LakehouseError) as e:
            return flask.Response(f"brokerscope: {e}\n", 404, mimetype="text/plain")
        if fmt == "html":
            return flask.Response(text, mimetype="text/html")
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in incident_id)
        return flask.Response(text, mimetype="text/markdown", headers={
            "Content-Disposition": f'attachment; filename="incident-{safe}.md"'})

    app.clientside_callback(PAGE_REQUEST, Output("page-request", "data"), Input("url", "pathname"),
                            State("page-path", "data"))

    @app.callback(Output("page", "children"), Output("page-path", "data"), Input("page-request", "data"),
                  prevent_initial_call=True)
    def _page(pathname):
        if not pathname:
            return dash.no_update, dash.no_update
        return build_page(pathname), pathname

    @app.callback(Output("overview-body", "children"), Input("overview-refresh", "n_intervals"),
                  prevent_initial_call=True)
    def _overview_refresh(_n):
        return refreshed_overview(gold)

    app.clientside_callback(ZOOM_FROM_RELAYOUT, Output("zoom", "data"), Input("timeline", "relayoutData"),
                            prevent_initial_call=True)

    app.clientside_callback(BROWSER_ZONE, Output("browser-zone", "data"), Input("incident-id", "data"))

    @app.callback(Output("timeline", "figure"), Output("range-error", "children"), Output("range-from", "value"),
                  Output("range-until", "value"), Input("range-choice", "value"), Input("zoom", "data"),
                  Input("range-from", "value"), Input("range-until", "value"), Input("zone-choice", "value"),
                  State("incident-id", "data"), State("browser-zone", "data"), prevent_initial_call=True)
    def _timeline(choice, zoom, since, until, zone_choice, incident_id, browser_zone):
        return timeline_update(gold, incident_id, dash.ctx.triggered_id, choice, zoom, since, until,
                               Clock.named(browser_zone) if zone_choice == "local" else UTC_CLOCK)

    @app.callback(Output("findings-content", "children"), Input("f-group", "value"), Input("f-since", "value"),
                  Input("f-until", "value"), State("url", "pathname"), prevent_initial_call=True)
    def _findings(group, since, until, pathname):
        view = D.VIEW_BY_PATH.get(pathname)
        if view is None:
            return dash.no_update
        try:
            lo, hi = parse_since(since or None), parse_since(until or None)
        except ValueError as e:
            return html.P(f"time filter: {e}", id="filter-error")
        try:
            return view_content(gold, view, group or None, lo, hi)
        except D.MissingTable as e:
            return L.missing_table_page(e)

    @app.callback(Output("destinations-content", "children"), Output("d-destinations", "options"),
                  Output("d-destinations", "value"), Input("d-group", "value"), Input("d-since", "value"),
                  Input("d-until", "value"), Input("d-destinations", "value"), prevent_initial_call=True)
    def _destinations(group, since, until, chosen):
        try:
            return refreshed_destinations(gold, group, since, until, chosen, dash.ctx.triggered_id == "d-destinations")
        except LakehouseError as e:
            return L.message_page("The lakehouse cannot be read", str(e)), dash.no_update, dash.no_update

    @app.callback(Output("readiness-content", "children"), Input("r-group", "value"), Input("r-until", "value"),
                  prevent_initial_call=True)
    def _readiness(group, until):
        try:
            return refreshed_readiness(gold, group, until)
        except LakehouseError as e:
            return L.message_page("The lakehouse cannot be read", str(e))

    install_guards(app, settings.hosts_for(bind_host or settings.host))
    return app


class DashboardServer:
    """The app on a real HTTP server in a thread (threaded WSGI); stop() ends it."""

    def __init__(self, app: dash.Dash, host: str = "127.0.0.1", port: int = 8050, quiet: bool = True):
        if quiet:
            logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
        self._srv = make_server(host, port, app.server, threaded=True)
        self.host, self.port = host, self._srv.server_port
        self._thread = threading.Thread(target=self._srv.serve_forever, name="brokerscope-dashboard", daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> "DashboardServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._srv.shutdown()
        self._srv.server_close()
        self._thread.join(timeout=10)

    def serve_forever(self) -> None:
        try:
            self._srv.serve_forever()
        finally:
            self._srv.server_close()

    def __enter__(self) -> "DashboardServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def open_gold(root: str, max_points: int = 1000, stale_after_s: float | None = None,
              hole_s: float | None = None) -> D.Gold:
    """The lakehouse at root, which must exist (never created by the dashboard); `stale_after_s`:
    the age past which the overview calls a group's state unknown (dashboards/health.py)."""

    if "://" not in root and not Path(root).is_dir():
        raise FileNotFoundError(f"no lakehouse at {root}: collect or replay first (brokerscope collect -c CFG / "
                                "brokerscope replay -c CFG FILE), then brokerscope analyze -c CFG")
    gold = D.Gold(Lakehouse(root), max_points=max_points)
    if stale_after_s is not None:
        gold.stale_after_s = stale_after_s
    if hole_s is not None:
        gold.hole_s = hole_s
    return gold
