"""Data → Plotly figures (pure functions). Every user-controlled string (broker, instance, queue,
topic, group names, messages) is HTML-escaped before it reaches a label, hover text, title or
annotation: Plotly renders those strings as HTML-like markup."""

from __future__ import annotations

import copy
import html
import threading
from datetime import datetime

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboards.clock import UTC_CLOCK, Clock
from dashboards.data import ROLLUP, TimelineData, utc
from dashboards.health import age_text
from dashboards.series import DestinationSeries, GcPauses
from dashboards.states import MIXED

ACTIVE = "#2e7d32"
ACTIVE_MAYBE = "rgba(46,125,50,0.28)"
SPLIT_CERTAIN = "rgba(211,47,47,0.38)"
SPLIT_POSSIBLE = "rgba(211,47,47,0.12)"
OUTAGE_CERTAIN = "rgba(97,97,97,0.38)"
OUTAGE_POSSIBLE = "rgba(97,97,97,0.13)"
PALETTE = ("#1565c0", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#558b2f", "#4e342e", "#283593")


# quick time-range selection on the figure itself (client side; the page's radio buttons reload data)
RANGE_BUTTONS = [dict(step="all", label="all"), dict(count=1, step="hour", stepmode="backward", label="1 h"),
                 dict(count=10, step="minute", stepmode="backward", label="10 min"),
                 dict(count=1, step="minute", stepmode="backward", label="1 min")]


def dt64(values: list[datetime]) -> np.ndarray:
    """Datetimes as a numpy datetime64[us] (UTC) array: Plotly serializes it without a per-item walk."""
    return np.array([utc(v).replace(tzinfo=None) for v in values], dtype="datetime64[us]")


def esc(text: object) -> str:
    """Text for Plotly: escaped, so `<img onerror=…>` in a queue name shows as those characters."""
    # quotes stay: with < > & escaped no tag (so no attribute) can form, and Plotly would show
    # &quot; literally in legends and hover text
    return html.escape("" if text is None else str(text), quote=False)


def clock(ts: datetime | None, ms: bool = True) -> str:
    if ts is None:
        return "?"
    t = utc(ts)
    return t.strftime("%H:%M:%S") + (f".{t.microsecond // 1000:03d}" if ms else "")


def stamp(ts: datetime | None) -> str:
    """'2026-11-23 11:00:03.512 UTC'."""
    return UTC_CLOCK.stamp(ts)


def _ms(a: datetime, b: datetime) -> float:
    return (utc(b) - utc(a)).total_seconds() * 1000.0


def zk_row(ensemble: str) -> str:
    return esc(f"ZooKeeper {ensemble}")


def role_bars(data: TimelineData, clk: Clock = UTC_CLOCK) -> list[go.Bar]:
    """Observed-active spans (solid) and the bounds where the role may have begun or ended (pale)."""
    solid: dict[str, list] = {"y": [], "base": [], "x": [], "text": []}
    pale: dict[str, list] = {"y": [], "base": [], "x": [], "text": []}
    for r in data.intervals:
        y = esc(r["instance"])
        start, end = utc(r["start_ts"]), utc(r["end_ts"])
        solid["y"].append(y)
        solid["base"].append(clk.wall(start))
        solid["x"].append(max(_ms(start, end), 1.0))
        solid["text"].append(f"{y} active (observed)<br>{clk.stamp(start)} → {clk.stamp(end)}"
                             + ("<br>still active" if r["is_open"] else ""))
        for lo, hi, what in ((r["start_lower"], start, "may have become active after"),
                             (end, r["end_upper"], "may have stayed active until")):
            if lo is not None and hi is not None and utc(hi) > utc(lo):
                pale["y"].append(y)
                pale["base"].append(clk.wall(lo))
                pale["x"].append(_ms(lo, hi))
                pale["text"].append(f"{y} {what}<br>{clk.stamp(lo)} → {clk.stamp(hi)}")
    bars = []
    for spec, name, color in ((pale, "active (bounds)", ACTIVE_MAYBE), (solid, "active (observed)", ACTIVE)):
        if spec["y"]:
            bars.append(go.Bar(orientation="h", y=spec["y"], base=spec["base"], x=spec["x"], name=name,
                               marker_color=color, hovertext=spec["text"], hoverinfo="text", width=0.5,
                               legendgroup=name))
    return bars


STATE_COLOR = {"active": "rgba(46,125,50,0.18)", "standby": "rgba(21,101,192,0.45)", "starting": "rgba(249,168,37,0.6)",
               "unreachable": "rgba(183,28,28,0.55)", "unknown": "rgba(158,158,158,0.35)",
               MIXED: "rgba(109,76,65,0.55)"}
STATE_LABEL = {"active": "state: active", "standby": "state: standby", "starting": "state: starting",
               "unreachable": "state: not answering", "unknown": "state: unknown (no observation)",
               MIXED: "state: changed within the minute (zoom in)"}


def _state_words(run: dict) -> str:
    """'active', or for a MIXED run its observations per state: 'changed within the minute: 3 active, 2 not answering'."""
    if run["state"] != MIXED:
        return STATE_LABEL[run["state"]].removeprefix("state: ")
    counts = ", ".join(f"{n} {STATE_LABEL[s].removeprefix('state: ').split(' (')[0]}" for s, n in run.get("states", {}).items())
    return f"changed within the minute: {counts}"


def state_bars(data: TimelineData, clk: Clock = UTC_CLOCK) -> list[go.Bar]:
    """One wide bar per state run of each broker (dashboards/states.py), under the active bars:
    the whole story — standby, starting, not answering, unknown — not only who was live."""
    bars = []
    for state, color in STATE_COLOR.items():
        runs = [r for r in data.states if r["state"] == state]
        if not runs:
            continue
        bars.append(go.Bar(
            orientation="h", y=[esc(r["instance"]) for r in runs], base=[clk.wall(r["start"]) for r in runs],
            x=[max(_ms(r["start"], r["end"]), 1.0) for r in runs], name=STATE_LABEL[state], marker_color=color,
            width=0.85, legendgroup=STATE_LABEL[state], hoverinfo="text",
            hovertext=[f"{esc(r['instance'])} {_state_words(r)}<br>{clk.stamp(r['start'])} → "
                       f"{clk.stamp(r['end'])}<br>{r['observations']} observation(s)" for r in runs]))
    return bars


def window_shapes(data: TimelineData, clk: Clock = UTC_CLOCK) -> list[dict]:
    """Split-brain and outage windows as shaded bands over all rows; certain darker than possible."""
    shapes = []

    def band(x0, x1, color, name, dash=None):
        if x0 is None or x1 is None:
            return
        shapes.append(dict(type="rect", xref="x", yref="paper", x0=clk.wall(x0), x1=clk.wall(x1), y0=0, y1=1,
                           fillcolor=color, line=dict(width=1 if dash else 0, color=color, dash=dash or "solid"),
                           layer="below", name=name, showlegend=name not in {s["name"] for s in shapes},
                           legendgroup=name))

    for w in data.split_brains:
        band(w["possible_start"] or w["certain_start"], w["possible_end"] or w["certain_end"], SPLIT_POSSIBLE,
             "split brain (possible)", dash="dot")
        band(w["certain_start"], w["certain_end"], SPLIT_CERTAIN, "split brain (certain)")
    for e in data.failovers:
        band(e["outage_start"], e["outage_end"], OUTAGE_POSSIBLE, "no live instance (possible)", dash="dot")
        if e["outage_lower_s"] and e["old_first_inactive"] is not None and e["new_last_inactive"] is not None:
            band(e["old_first_inactive"], e["new_last_inactive"], OUTAGE_CERTAIN, "no live instance (certain)")
    return shapes


def marker_traces(data: TimelineData, clk: Clock = UTC_CLOCK) -> list[go.Scatter]:
    traces = []
    if data.gc_pauses:
        traces.append(go.Scatter(
            x=clk.walls(dt64([g["ts"] for g in data.gc_pauses])), y=[esc(g["target"]) for g in data.gc_pauses], mode="markers",
            name="GC pause", marker=dict(symbol="x", size=12, color="#c62828", line=dict(width=1)),
            hovertext=[f"GC {esc(g['code'])}: {g['value']:.0f} ms<br>{esc(g['message'])}" for g in data.gc_pauses],
            hoverinfo="text"))
    if data.zk_elections:
        traces.append(go.Scatter(
            x=[clk.wall(e["elected_at"] or e["new_first_seen"]) for e in data.zk_elections],
            y=[zk_row(e["ensemble"]) for e in data.zk_elections], mode="markers", name="ZooKeeper election",
            marker=dict(symbol="diamond", size=12, color="#6a1b9a"),
            hovertext=[f"election: {esc(e['old_leader'])} → {esc(e['new_leader'])} ({esc(e['cause'])})<br>"
                       f"at most {e['duration_upper_s']:.1f} s" for e in data.zk_elections], hoverinfo="text"))
    if data.zk_handovers:
        traces.append(go.Scatter(
            x=[clk.wall(h["start_ts"]) for h in data.zk_handovers],
            y=[zk_row(h["ensemble"] or h["group_name"]) for h in data.zk_handovers], mode="markers",
            name="lease handover / loss", marker=dict(symbol="star", size=13, color="#ef6c00"),
            hovertext=[f"{esc(h['code'])}<br>{esc(h['message'])}" for h in data.zk_handovers], hoverinfo="text"))
    return traces


def series_traces(data: TimelineData, clk: Clock = UTC_CLOCK) -> list[tuple[int, go.Scatter]]:
    """(row, trace): connections (row 2) and messages in/out per second (row 3) per instance."""
    out = []
    suffix = f" (max per {data.bucket_s:g} s)" if data.bucket_s else ""
    for i, (inst, s) in enumerate(data.series.items()):
        color = PALETTE[i % len(PALETTE)]
        name = esc(inst)
        ts = clk.walls(s["ts"])
        out.append((2, go.Scatter(x=ts, y=s["connections"], mode="lines", line=dict(color=color, shape="hv"),
                                  name=f"{name} connections", legendgroup=name,
                                  hovertemplate=f"{name}: %{{y}} connections{suffix}<extra></extra>")))
        out.append((3, go.Scatter(x=ts, y=s["in_per_s"], mode="lines", line=dict(color=color),
                                  name=f"{name} in/s", legendgroup=name,
                                  hovertemplate=f"{name}: %{{y:.1f}} msg/s in<extra></extra>")))
        out.append((3, go.Scatter(x=ts, y=s["out_per_s"], mode="lines", line=dict(color=color, dash="dot"),
                                  name=f"{name} out/s", legendgroup=name,
                                  hovertemplate=f"{name}: %{{y:.1f}} msg/s out<extra></extra>")))
    return out


def alert_annotations(data: TimelineData, clk: Clock = UTC_CLOCK) -> tuple[list[dict], list[dict]]:
    annotations, lines = [], []
    for k, a in enumerate(data.alerts[:30]):
        text = a["text"] if len(a["text"]) <= 40 else a["text"][:39] + "…"
        annotations.append(dict(x=clk.wall(a["ts"]), xref="x", y=1.0 + 0.035 * (k % 3), yref="paper", text="🔔 " + esc(text),
                                showarrow=False, font=dict(size=10, color="#b71c1c"), hovertext=esc(a["text"]),
                                xanchor="left"))
        lines.append(dict(type="line", xref="x", yref="paper", x0=clk.wall(a["ts"]), x1=clk.wall(a["ts"]), y0=0, y1=1,
                          line=dict(color="#b71c1c", width=1, dash="dash")))
    return annotations, lines


_GRID_LOCK = threading.Lock()
_GRID: list[go.Figure] = []


def timeline_grid() -> go.Figure:
    """The timeline's three empty rows on one time axis: a copy of one built once (make_subplots
    validates every axis it writes, 0.1-0.2 s a page on a loaded machine; a deep copy ~4x less)."""
    with _GRID_LOCK:
        if not _GRID:
            _GRID.append(make_subplots(
                rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.05, row_heights=[0.5, 0.22, 0.28],
                subplot_titles=("state per broker (wide) and who was live (solid green)", "client connections",
                                "messages per second (in solid, out dotted)")))
        return copy.deepcopy(_GRID[0])


def timeline_margins(traces, shapes: list[dict], categories: list[str]) -> dict:
    """The timeline's margins (px), wide enough for its legend on the right and its y labels on the
    left, estimated generously from the texts' lengths. Plotly's automargin stays on and grows a
    margin that is too narrow, but growing one draws the whole figure a second time: about half of
    the plotting before the incident page's first paint."""
    legend = [t.name or "" for t in traces if t.showlegend is not False]
    legend += [sh.get("name") or "" for sh in shapes if sh.get("showlegend")]
    longest_legend = max(map(len, legend), default=0)
    longest_label = max([len(c) for c in categories] + [5])  # 5: a tick of the series rows ("2.5k", "600")
    return dict(l=round(14 + 7 * longest_label), r=round(70 + 6.2 * longest_legend) if legend else 10, t=90, b=70)


def incident_timeline(data: TimelineData, title: str, clk: Clock = UTC_CLOCK) -> go.Figure:
    """One figure per incident: roles, windows and markers on top; connections and message rates
    per instance beneath, on one shared time axis, in the clock's zone (dashboards/clock.py)."""
    fig = timeline_grid()
    for bar in state_bars(data, clk) + role_bars(data, clk):
        fig.add_trace(bar, row=1, col=1)
    markers = marker_traces(data, clk)
    for trace in markers:
        fig.add_trace(trace, row=1, col=1)
    for row, trace in series_traces(data, clk):
        fig.add_trace(trace, row=row, col=1)
    annotations, alert_lines = alert_annotations(data, clk)
    categories = [esc(i) for i in data.instances]
    categories += sorted({t.y[0] for t in markers if t.y and t.y[0] not in categories})
    shapes = window_shapes(data, clk) + alert_lines
    fig.update_layout(
        title=dict(text=esc(title), x=0.01, font=dict(size=15)), shapes=shapes,
        barmode="overlay", height=660, margin=timeline_margins(fig.data, shapes, categories), hovermode="closest",
        legend=dict(orientation="v", x=1.01, y=1, font=dict(size=11)), uirevision="timeline", plot_bgcolor="white",
    )
    for a in annotations:
        fig.add_annotation(**a)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=list(reversed(categories)),
                     row=1, col=1, gridcolor="#eee")
    fig.update_yaxes(rangemode="tozero", gridcolor="#eee", row=2, col=1)
    fig.update_yaxes(rangemode="tozero", gridcolor="#eee", row=3, col=1)
    fig.update_xaxes(type="date", range=[clk.wall(data.start), clk.wall(data.end)], gridcolor="#eee", showspikes=True)
    fig.update_xaxes(title=dict(text=esc(f"time ({clk.name})"), font=dict(size=11)), row=3, col=1)
    fig.update_xaxes(rangeselector=dict(buttons=RANGE_BUTTONS, x=0, y=1.02, font=dict(size=10)), row=1, col=1)
    note = source_text(data)
    if note:
        fig.add_annotation(text=esc(note), xref="paper", yref="paper", x=1, y=-0.02, showarrow=False, xanchor="right",
                           font=dict(size=10, color="#555"), name="source-note")
    return fig


def source_text(data: TimelineData) -> str | None:
    """Under the timeline: how its states and series were drawn, and from which table."""
    if data.source == ROLLUP:
        return (f"{data.events_behind:,} observations, per minute from {ROLLUP}, in {data.bucket_s:g} s buckets; "
                f"zoom in below {age_text(data.max_points * 60)} for every observation")
    text = f"{data.events_behind:,} observations aggregated into {data.bucket_s:g} s buckets; zoom in for detail" \
        if data.bucket_s else None
    if data.source_note:
        text = f"{text + '. ' if text else ''}Read from every observation: {data.source_note}"
    return text


def lag_figure(series: dict[str, dict[str, list]], title: str = "replication lag (s)") -> go.Figure:
    fig = go.Figure()
    for name, s in series.items():
        fig.add_trace(go.Scatter(x=s["ts"], y=s["lag_s"], mode="lines", name=esc(name),
                                 hovertemplate=f"{esc(name)}: %{{y:.1f}} s<extra></extra>"))
    fig.update_layout(title=esc(title), height=320, margin=dict(l=10, r=10, t=40, b=10), plot_bgcolor="white",
                      uirevision="lag")
    fig.update_xaxes(type="date", rangeslider=dict(visible=True, thickness=0.08))
    return fig


def bucket_note(fig: go.Figure, text: str) -> None:
    """Say under the plot how its points were thinned (nothing when every point is drawn)."""
    fig.add_annotation(text=esc(text), xref="paper", yref="paper", x=1, y=-0.06, showarrow=False, xanchor="right",
                       yanchor="top", font=dict(size=10, color="#555"), name="bucket-note")


def pause_marker_sizes(pause_ms: np.ndarray) -> np.ndarray:
    """Marker diameter by pause: 1 ms → 7 px, 100 ms → 14, 1 s → 18, 10 s → 22 (at most 26)."""
    return np.clip(6 + 4 * np.log10(1 + np.maximum(pause_ms, 0)), 6, 26)


def gc_pause_figure(p: GcPauses, title: str = "stop-the-world pauses per JVM") -> go.Figure:
    """One marker trace of pauses per target (log y, size by pause, hover: type, cause, phase) and
    a dotted line of its heap after GC on a second y axis."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for i, (target, s) in enumerate(p.series.items()):
        color, name = PALETTE[i % len(PALETTE)], esc(target)
        hover = [f"{name}: {ms:,.1f} ms pause<br>{esc(t)} · {esc(c or '')}<br>{esc(ph or '')}"
                 for ms, t, c, ph in zip(s["pause_ms"], s["event_type"], s["cause"], s["phase"])]
        fig.add_trace(go.Scatter(x=s["ts"], y=np.maximum(s["pause_ms"], 0.001), mode="markers", name=f"{name} pause",
                                 legendgroup=name, hovertext=hover, hoverinfo="text",
                                 marker=dict(color=color, size=pause_marker_sizes(s["pause_ms"]), opacity=0.75,
                                             line=dict(width=0.5, color="white"))), secondary_y=False)
        if not np.isnan(s["heap_mib"]).all():
            fig.add_trace(go.Scatter(x=s["ts"], y=s["heap_mib"], mode="lines", name=f"{name} heap after GC",
                                     legendgroup=name, connectgaps=True, line=dict(color=color, width=1, dash="dot"),
                                     hovertemplate=f"{name}: %{{y:,.0f}} MiB after GC<extra></extra>"), secondary_y=True)
    fig.update_layout(title=esc(title), height=380, margin=dict(l=10, r=10, t=40, b=40), plot_bgcolor="white",
                      hovermode="closest", uirevision="gc")
    fig.update_yaxes(type="log", title_text="pause (ms)", gridcolor="#eee", secondary_y=False)
    fig.update_yaxes(title_text="heap after GC (MiB)", rangemode="tozero", showgrid=False, secondary_y=True)
    fig.update_xaxes(type="date", gridcolor="#eee")
    if p.bucket_s:
        bucket_note(fig, f"{p.pauses:,} pauses: the longest of each {p.bucket_s:g} s per JVM is drawn; zoom in or "
                         "narrow the time range for every pause")
    return fig


def destination_figure(d: DestinationSeries) -> go.Figure:
    """Messages (top) and consumers (bottom) per instance and destination, on one time axis."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.62, 0.38],
                        subplot_titles=("messages on the destination", "consumers"))
    for i, s in enumerate(d.series.values()):
        color, name = PALETTE[i % len(PALETTE)], esc(s["label"])
        fig.add_trace(go.Scatter(x=s["ts"], y=s["messages"], mode="lines", line=dict(color=color, shape="hv"),
                                 name=name, legendgroup=name,
                                 hovertemplate=f"{name}: %{{y:,.0f}} messages<extra></extra>"), row=1, col=1)
        fig.add_trace(go.Scatter(x=s["ts"], y=s["consumers"], mode="lines", line=dict(color=color, shape="hv"),
                                 name=f"{name} consumers", legendgroup=name, showlegend=False,
                                 hovertemplate=f"{name}: %{{y:,.0f}} consumers<extra></extra>"), row=2, col=1)
    fig.update_layout(height=560, margin=dict(l=10, r=10, t=40, b=40), plot_bgcolor="white", hovermode="closest",
                      legend=dict(font=dict(size=11)), uirevision="destinations")
    fig.update_yaxes(rangemode="tozero", gridcolor="#eee")
    fig.update_xaxes(type="date", gridcolor="#eee", showspikes=True)
    if d.start and d.end:
        fig.update_xaxes(range=[utc(d.start), utc(d.end)])
    if d.bucket_s:
        bucket_note(fig, f"{d.rows:,} observations in {d.bucket_s:g} s buckets: the most messages and the fewest "
                         "consumers of each are drawn")
    return fig
