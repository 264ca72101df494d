"""Data → Dash components (pure functions). Text is passed to Dash as text, never as HTML or
Markdown, so React escapes every broker, queue and topic name."""

from __future__ import annotations

from urllib.parse import quote

from dash import dcc, html

from dashboards.data import VIEWS, FindingView, IncidentBundle, MissingTable, split_names
from dashboards.figures import stamp
from dashboards.health import GroupHealth, age_text
from dashboards.report import value_text, window_sentences

DESTINATIONS = "/destinations"
READINESS = "/readiness"
NAV = ((("/", "Overview"), (DESTINATIONS, "Destinations")) + tuple((v.path, v.title) for v in VIEWS)
       + ((READINESS, "Failover readiness"),))
SEVERITY_COLOR = {"critical": "#b71c1c", "error": "#d84315", "warn": "#f9a825", "info": "#546e7a"}
RANGES = (("incident", "incident"), ("1h", "± 1 h"), ("6h", "± 6 h"), ("24h", "± 24 h"), ("all", "everything"))

CELL = {"padding": "3px 8px", "borderBottom": "1px solid #e0e0e0", "verticalAlign": "top", "fontSize": "13px"}


def incident_href(incident_id: str) -> str:
    return "/incident/" + quote(incident_id, safe="")


def report_href(incident_id: str, fmt: str) -> str:
    return f"/report/{quote(incident_id, safe='')}.{fmt}"


def badge(severity: str) -> html.Span:
    return html.Span(severity, className=f"sev sev-{severity}", style={
        "background": SEVERITY_COLOR.get(severity, "#757575"), "color": "white", "borderRadius": "3px",
        "padding": "1px 6px", "fontSize": "12px", "marginRight": "6px"})


def table(rows: list[dict], columns: list[str], table_id: str | None = None,
          links: dict[str, str] | None = None, link_column: str = "incident") -> html.Table:
    """A plain HTML table; `links` maps a row's first column value to an incident id."""
    head = html.Tr([html.Th(c, style={**CELL, "textAlign": "left", "background": "#f5f5f5"}) for c in columns]
                   + ([html.Th(link_column, style={**CELL, "background": "#f5f5f5"})] if links is not None else []))
    body = []
    for r in rows:
        cells = [html.Td(value_text(r.get(c)), style=CELL) for c in columns]
        if links is not None:
            inc = links.get(r.get(columns[0])) if columns else None
            cells.append(html.Td(dcc.Link("open incident", href=incident_href(inc)) if inc else "", style=CELL))
        body.append(html.Tr(cells))
    return html.Table([html.Thead(head), html.Tbody(body)], id=table_id,
                      style={"borderCollapse": "collapse", "width": "100%"})


def nav_bar(path: str) -> html.Div:
    return html.Div([
        html.Span("brokerscope", style={"fontWeight": "bold", "marginRight": "18px"}),
        *[dcc.Link(label, href=href, style={"marginRight": "14px", "fontWeight": "bold" if href == path else "normal"})
          for href, label in NAV],
    ], style={"padding": "8px 12px", "background": "#eceff1", "marginBottom": "10px"})


def missing_table_page(err: MissingTable) -> html.Div:
    return html.Div([
        html.H2("Not there yet"),
        html.P(["This page needs the table ", html.Code(err.table), ", which is not in the lakehouse at ",
                html.Code(err.root), "."]),
        html.P(["Create it with: ", html.Code(err.command, id="missing-command")]),
    ], id="missing-table", className="missing")


def message_page(title: str, text: str) -> html.Div:
    return html.Div([html.H2(title), html.P(text, id="page-message")])


# --- overview ----------------------------------------------------------------------------------------


def member_line(inst: str, r: dict, live: list[str]) -> str:
    if not r.get("reachable"):
        return f"{inst}: not answering"
    if inst in live or r.get("active"):
        return f"{inst}: {r.get('role')}"
    sync = {True: "synchronized", False: "NOT synchronized", None: "sync not reported"}[r.get("replica_sync")]
    return f"{inst}: {r.get('role')}, {sync}"


STATE_COLOR = {"failing": "#b71c1c", "unknown": "#616161", "degraded": "#ef6c00", "ok": "#2e7d32"}


def state_badge(state: str) -> html.Span:
    return html.Span(state, className=f"state state-{state}", style={
        "background": STATE_COLOR.get(state, "#757575"), "color": "white", "borderRadius": "3px",
        "padding": "1px 6px", "fontSize": "12px", "marginRight": "6px"})


def group_card(grp: dict) -> html.Div:
    """One HA group: its state (dashboards/health.py) and why in one line, linked to the finding,
    then what each member said last."""
    health: GroupHealth = grp["health"]
    live = grp["live"]
    if grp["kind"] == "zookeeper":
        q = grp["quorum"]
        live_text = "quorum: " + (f"{q['status']}, leader {q['leader'] or '—'}" + (", bare majority" if q["bare_majority"] else "")
                                  if q else "not observed")
    else:
        live_text = ("live: " + ", ".join(live)) if live else "live: NONE"
        if len(live) > 1 and grp["kind"] != "weblogic":
            live_text += "  (more than one live!)"
    if health.state == "unknown":
        live_text = f"as last observed — {live_text}"
    reason = dcc.Link(health.reason, href=health.href) if health.href else health.reason
    items = [html.Li(member_line(i, r, live)) for i, r in sorted(grp["members"].items())]
    items += [html.Li(f"open risk: {r['code']} on {r['instance'] or grp['group']} — {r['message']}") for r in grp["risks"]]
    items += [html.Li(f"collector: {r['target']} not answering ({r['error_kind'] or 'error'})") for r in grp["collector_errors"]]
    if grp["alerts"]:
        items.append(html.Li(f"{grp['alerts']} open alert(s)"))
    links = [html.Li([badge(i["severity"]), dcc.Link(i["title"], href=incident_href(i["incident_id"]))])
             for i in grp["incidents"]]
    seen = ""
    if grp["last_seen"]:
        seen = f"last observed {stamp(grp['last_seen'])} ({age_text(health.age_s or 0)} ago)"
    return html.Div([
        html.H3([state_badge(health.state), grp["group"], html.Small(f"  {grp['kind']}", style={"color": "#777"})],
                style={"margin": "0 0 4px 0", "fontSize": "16px"}),
        html.Div(reason, className="reason", style={"marginBottom": "3px"}),
        html.Div(live_text, className="live", style={"fontWeight": "bold"}),
        html.Ul(items, style={"margin": "2px 0"}),
        html.Ul(links, className="open-incidents", style={"margin": "2px 0"}) if links else None,
        html.Div(seen, className="last-seen", style={"color": "#777", "fontSize": "12px"}),
    ], className=f"group-card group-{health.state}", **{"data-group": grp["group"], "data-state": health.state},
        style={"border": "1px solid #cfd8dc", "borderLeft": f"5px solid {STATE_COLOR[health.state]}",
               "borderRadius": "4px", "padding": "8px", "margin": "6px", "width": "380px", "display": "inline-block",
               "verticalAlign": "top"})


OVERVIEW_REFRESH_MS = 10_000  # the overview re-reads the lakehouse this often (dcc.Interval)


def overview_layout(groups: list[dict], incidents: list[dict] | None, incidents_missing: MissingTable | None = None,
                    refresh_ms: int = OVERVIEW_REFRESH_MS) -> html.Div:
    """The overview, inside a div the refresh timer re-renders (app.py: the overview-refresh callback)."""
    return html.Div([dcc.Interval(id="overview-refresh", interval=refresh_ms),
                     html.Div(overview_body(groups, incidents, incidents_missing), id="overview-body")], id="overview")


def overview_body(groups: list[dict], incidents: list[dict] | None, incidents_missing: MissingTable | None = None) -> list:
    parts = [html.H2("HA groups now (worst first)"),
             html.Div([group_card(g) for g in groups] or [html.P("no groups observed yet")], id="groups")]
    parts.append(html.H2("Incidents"))
    if incidents_missing is not None:
        parts.append(missing_table_page(incidents_missing))
    else:
        rows = [{"incident": i["title"], **i} for i in incidents or []]
        parts.append(html.Table([html.Tbody([
            html.Tr([html.Td([badge(r["severity"]), dcc.Link(r["title"], href=incident_href(r["incident_id"]))], style=CELL),
                     html.Td(r["status"], style=CELL), html.Td(r["cluster"], style=CELL),
                     html.Td(stamp(r["start_ts"]), style=CELL), html.Td(value_text(r["duration_s"]) + " s", style=CELL)])
            for r in rows])], id="incident-list", style={"borderCollapse": "collapse"}) if rows else html.P("no incidents"))
    return parts


# --- incident ------------------------------------------------------------------------------------------


def window_lines(b: IncidentBundle) -> list[html.Li]:
    """The windows that matter, in words, straight from the gold rows."""
    return [html.Li(text, className=kind) for kind, text in window_sentences(b)]


def narrative_block(inc: dict, causes: list[dict]) -> html.Div:
    advice = [a.strip(" -•") for a in inc["advice"].splitlines() if a.strip()]
    return html.Div([
        html.H3("What happened"),
        html.Div([html.P(p, style={"whiteSpace": "pre-wrap", "margin": "2px 0"}) for p in inc["narrative"].split("\n")
                  if p.strip()], id="narrative"),
        html.H3("Probable causes") if causes else None,
        html.Ul([html.Li(f"{c['message']} ({c['confidence']}, {c['lead_s']:.1f} s before)") for c in causes],
                id="causes") if causes else None,
        html.H3("What to do"),
        html.Ul([html.Li(a) for a in advice], id="advice"),
    ])


ZONES = (("utc", "UTC"), ("local", "my browser's time zone"))


def range_bar() -> html.Div:
    """A free time range for the incident timeline, and the zone it is typed and shown in."""
    hint = "2026-11-23 10:55, 15m, yesterday"
    return html.Div([
        html.Span("from: "), dcc.Input(id="range-from", value="", placeholder=hint, debounce=True, size="24"),
        html.Span("  until: "), dcc.Input(id="range-until", value="", placeholder=hint, debounce=True, size="24"),
        html.Span("  times in: "),
        dcc.RadioItems(id="zone-choice", options=[{"label": lbl, "value": v} for v, lbl in ZONES], value="utc",
                       inline=True, inputStyle={"marginLeft": "10px"}, style={"display": "inline-block"}),
        html.Span(id="range-error", style={"color": "#b71c1c", "marginLeft": "10px"}),
    ], style={"margin": "4px 0"})


EVIDENCE_COLUMNS = ["start_ts", "end_ts", "severity", "code", "instance", "source_table", "message"]


def incident_layout(b: IncidentBundle, figure, range_choice: str = "incident") -> html.Div:
    inc = b.incident
    return html.Div([
        html.H2([badge(inc["severity"]), html.Span(inc["title"], id="incident-title")]),
        html.Div([f"{inc['status']} · cluster ", html.B(inc["cluster"], id="incident-cluster"), f" ({inc['kind']}) · ",
                  stamp(inc["start_ts"]), " → ", stamp(inc["end_ts"]), f" ({inc['duration_s']:.1f} s) · instances: ",
                  html.Span(", ".join(split_names(inc["instances"])), id="incident-instances")],
                 style={"color": "#444"}),
        html.Div([html.A("post-incident report (HTML)", href=report_href(inc["incident_id"], "html"), id="report-html",
                         target="_self", style={"marginRight": "14px"}),
                  html.A("report (Markdown)", href=report_href(inc["incident_id"], "md"), id="report-md")],
                 style={"margin": "6px 0"}),
        narrative_block(inc, b.causes),
        html.H3("Windows"),
        html.Ul(window_lines(b), id="windows"),
        html.Div([html.Span("time range: "),
                  dcc.RadioItems(id="range-choice", options=[{"label": lbl, "value": v} for v, lbl in RANGES],
                                 value=range_choice, inline=True, inputStyle={"marginLeft": "10px"})]),
        range_bar(),
        dcc.Graph(id="timeline", figure=figure, config={"displaylogo": False, "scrollZoom": True}),
        dcc.Store(id="incident-id", data=inc["incident_id"]),
        dcc.Store(id="zoom"),
        dcc.Store(id="browser-zone"),
        html.H3(f"Evidence ({len(b.evidence)} row{'' if len(b.evidence) == 1 else 's'})"),
        table(b.evidence, EVIDENCE_COLUMNS, table_id="evidence"),
    ], id="incident")


# --- finding views ----------------------------------------------------------------------------------------


def filter_bar(groups: list[str], group: str | None, since: str | None, until: str | None,
               prefix: str = "f") -> html.Div:
    """Group, from and to: ids {prefix}-group, {prefix}-since, {prefix}-until."""
    return html.Div([
        html.Span("group / cluster: "),
        dcc.Dropdown(id=f"{prefix}-group", options=[{"label": g, "value": g} for g in groups], value=group,
                     placeholder="all", style={"width": "280px", "display": "inline-block", "verticalAlign": "middle"}),
        html.Span("  from: "), dcc.Input(id=f"{prefix}-since", value=since or "", placeholder="15m or 2026-11-23T11:00Z",
                                        debounce=True),
        html.Span("  to: "), dcc.Input(id=f"{prefix}-until", value=until or "", placeholder="RFC 3339", debounce=True),
    ], style={"margin": "6px 0"})


def findings_table(view: FindingView, rows: list[dict], total: int, links: dict[str, str]) -> html.Div:
    shown = f"{len(rows)} of {total} (newest first)" if total > len(rows) else f"{total} finding(s)"
    if not rows:  # a sentence, not a header row of raw column names
        return html.Div([html.P(shown, id="findings-count"),
                         html.P(f"No {view.title.lower()} findings for this group and time range.", id="findings")])
    return html.Div([html.P(shown, id="findings-count"),
                     table(rows, [view.key, *view.columns], table_id="findings", links=links)])


def findings_layout(view: FindingView, groups: list[str], content, extra=None) -> html.Div:
    return html.Div([html.H2(view.title), filter_bar(groups, None, None, None), extra,
                     html.Div(content, id="findings-content")], id="findings-page")


def figure_or_note(graph_id: str, figure, note: str | None) -> html.Div:
    """The figure, or the sentence saying why there is none."""
    if note:
        return html.Div(html.P(note, id=f"{graph_id}-note", className="figure-note"))
    return html.Div(dcc.Graph(id=graph_id, figure=figure, config={"displaylogo": False}))


def destination_options(ranked: list[tuple[str, str, float]]) -> list[dict]:
    """The picker's choices, deepest first: the label is text (escaped by React)."""
    return [{"label": label + ("" if depth is None else f" (max {value_text(depth)})"), "value": key}
            for key, label, depth in ranked]


def destinations_layout(groups: list[str], options: list[dict], chosen: list[str], content) -> html.Div:
    return html.Div([
        html.H2("Destinations: depth and consumers over time"),
        filter_bar(groups, None, None, None, prefix="d"),
        html.Div([html.Span("destinations (the deepest 8 unless picked):"),
                  dcc.Dropdown(id="d-destinations", options=options, value=chosen, multi=True,
                               placeholder="the deepest 8", style={"maxWidth": "1100px"})],
                 style={"margin": "6px 0"}),
        html.Div(content, id="destinations-content"),
    ], id="destinations-page")


READINESS_COLUMNS = ["topic", "partition", "status", "committed", "translated", "translated_from", "re_read", "skipped",
                     "checkpoint_age_s", "detail"]
READINESS_COLOR = {"ready": "#2e7d32", "stale": "#ef6c00", "no-translation": "#ef6c00", "lossy": "#b71c1c",
                   "not-committed": "#616161", "unknown": "#616161"}


def readiness_block(groups: list, as_of_text: str) -> html.Div:
    """Per consumer group: if it failed over now, what it would re-read and skip, and its partitions."""
    if not groups:
        return html.Div(html.P(f"No failover_readiness rounds {as_of_text} for this group.", id="readiness-note"))
    out = []
    for n, g in enumerate(groups):
        amount = ("unknown (a cluster did not answer)" if g.re_read is None and g.skipped is None else
                  f"re-read {value_text(g.re_read)}, skip {value_text(g.skipped)}")
        age = "no checkpoint seen" if g.oldest_checkpoint_s is None else f"oldest checkpoint {value_text(g.oldest_checkpoint_s)} s"
        out.append(html.Div([
            html.H3([html.Span(g.status, className=f"readiness readiness-{g.status}", style={
                "background": READINESS_COLOR.get(g.status, "#757575"), "color": "white", "borderRadius": "3px",
                "padding": "1px 6px", "fontSize": "12px", "marginRight": "6px"}),
                     g.consumer_group, html.Small(f"  {g.replication}: {g.flow}", style={"color": "#777"})],
                    style={"margin": "8px 0 2px 0", "fontSize": "16px"}),
            html.Div(f"if it failed over now: {amount}; {age} — round {stamp(g.ts)}", className="readiness-headline"),
            table(g.partitions, READINESS_COLUMNS, table_id=f"readiness-table-{n}"),
        ], className="readiness-group", **{"data-group": g.consumer_group, "data-status": g.status}))
    return html.Div(out, id="readiness-groups")


def readiness_layout(groups: list[str], content) -> html.Div:
    return html.Div([
        html.H2("Failover readiness: what each consumer group would re-read or skip on DR"),
        html.Div([
            html.Span("group / cluster: "),
            dcc.Dropdown(id="r-group", options=[{"label": g, "value": g} for g in groups], value=None, placeholder="all",
                         style={"width": "280px", "display": "inline-block", "verticalAlign": "middle"}),
            html.Span("  as of: "), dcc.Input(id="r-until", value="", placeholder="now, or 2026-11-23T11:00Z, 15m",
                                             debounce=True),
        ], style={"margin": "6px 0"}),
        html.Div(content, id="readiness-content"),
    ], id="readiness-page")


def shell(path: str, content) -> html.Div:
    return html.Div([nav_bar(path), html.Div(content, style={"padding": "0 12px"})])
