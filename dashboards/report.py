"""The post-incident report: one self-contained document per incident (HTML with the timeline
figure and plotly.js embedded — no CDN, no network — or Markdown), from the same gold rows the
incident view shows. Every user-controlled string is escaped for the format it lands in."""

from __future__ import annotations

import html
from datetime import datetime, timezone

import plotly.io as pio

from collectors.text import printable
from dashboards.data import IncidentBundle, split_names
from dashboards.figures import incident_timeline, stamp

FORMATS = ("html", "md")

# evidence tables of the report: source table → columns shown
EVIDENCE_TABLES = {
    "split_brain_windows": ["instance_a", "instance_b", "certainty", "certain_start", "certain_end", "possible_start",
                            "possible_end", "duration_s", "enqueued_a", "enqueued_b"],
    "failover_events": ["event_type", "from_instance", "to_instance", "old_last_active", "new_first_active",
                        "outage_upper_s", "outage_lower_s", "detection_s"],
    "risk_findings": ["code", "severity", "certainty", "instance", "start_ts", "end_ts", "message", "advice"],
    "stuck_messages": ["code", "severity", "instance", "destination", "messages", "stuck_for_s", "message", "advice"],
    "replication_findings": ["code", "severity", "instance", "topic", "partition", "value_max", "unit", "message", "advice"],
    "gc_findings": ["code", "severity", "target", "ts", "value", "unit", "message", "advice"],
    "zk_findings": ["code", "severity", "ensemble", "instance", "start_ts", "end_ts", "message", "advice"],
    "ha_group_checks": ["check", "instances", "identities", "message", "advice"],
    "finding_causes": ["cause_code", "instance", "cause_ts", "effect_ts", "lead_s", "confidence", "message"],
}


def value_text(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, datetime):
        return stamp(v)
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".")
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def window_sentences(b: IncidentBundle) -> list[tuple[str, str]]:
    """(kind, sentence) for each split-brain window and failover of the incident."""
    out = []
    for w in b.findings.get("split_brain_windows") or b.timeline.split_brains:
        text = (f"split brain {w['instance_a']} + {w['instance_b']} ({w['certainty']}): certain "
                f"{stamp(w['certain_start'])} → {stamp(w['certain_end'])} ({w['duration_s']:.1f} s)")
        if w["possible_start"] is not None:
            text += f"; possible {stamp(w['possible_start'])} → " + (stamp(w["possible_end"]) if w["possible_end"] else "still open")
        if w["enqueued_a"] is not None or w["enqueued_b"] is not None:
            text += (f"; messages accepted: {value_text(w['enqueued_a'])} on {w['instance_a']}, "
                     f"{value_text(w['enqueued_b'])} on {w['instance_b']}")
        out.append(("split-brain", text))
    for e in b.findings.get("failover_events") or b.timeline.failovers:
        text = (f"{e['event_type']} {e['from_instance']} → {e['to_instance']}: last seen live "
                f"{stamp(e['old_last_active'])}, new live first seen {stamp(e['new_first_active'])}")
        if e["outage_upper_s"] is not None:
            text += f"; no live instance for at most {e['outage_upper_s']:.1f} s"
        if e["outage_lower_s"] is not None:
            text += f" (at least {e['outage_lower_s']:.1f} s)"
        shift = b.shifts.get(e.get("event_id"))
        if shift is not None and shift["state"] in ("arrived", "none-arrived"):
            quality = "" if shift["quality"] == "bounded" else f" [{shift['quality']}]"
            text += f"; clients: {shift['message']}{quality}"
        out.append(("failover", text))
    return out


def advice_lines(inc: dict) -> list[str]:
    return [a.strip(" -•") for a in (inc.get("advice") or "").splitlines() if a.strip()]


def summary_pairs(inc: dict) -> list[tuple[str, str]]:
    return [
        ("incident", inc["incident_id"]),
        ("cluster", f"{inc['cluster']} ({inc['kind']})"),
        ("severity", inc["severity"]),
        ("status", inc["status"]),
        ("from", stamp(inc["start_ts"])),
        ("to", stamp(inc["end_ts"])),
        ("duration", f"{inc['duration_s']:.1f} s"),
        ("instances", ", ".join(split_names(inc.get("instances")))),
        ("findings", f"{inc['finding_count']} ({inc['codes']})"),
    ]


def evidence_sections(b: IncidentBundle) -> list[tuple[str, list[str], list[dict]]]:
    """(table, columns, rows): the incident's evidence list, then each source table's rows."""
    out = [("incident_evidence", ["start_ts", "end_ts", "severity", "code", "instance", "source_table", "message"],
            b.evidence)]
    for name, cols in EVIDENCE_TABLES.items():
        got = b.findings.get(name) or (b.causes if name == "finding_causes" else [])
        if got:
            out.append((name, cols, got))
    return out


def generated_line() -> str:
    return "generated by brokerscope " + datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# --- HTML -------------------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#212121;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:3px;margin-top:28px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#f5f5f5}.sev{color:#fff;border-radius:3px;padding:1px 6px;font-size:12px}
.sev-critical{background:#b71c1c}.sev-error{background:#d84315}.sev-warn{background:#f9a825}.sev-info{background:#546e7a}
.muted{color:#777;font-size:12px}#narrative p{white-space:pre-wrap;margin:2px 0}
"""


def _e(v: object) -> str:
    return html.escape(printable(value_text(v), keep_newlines=True), quote=True)


def html_table(columns: list[str], rows: list[dict], table_id: str = "") -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(r.get(c))}</td>" for c in columns) + "</tr>" for r in rows)
    return f'<table id="{_e(table_id)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def render_html(b: IncidentBundle, figure_html: str | None = None) -> str:
    inc = b.incident
    if figure_html is None:
        fig = incident_timeline(b.timeline, inc["title"])
        figure_html = pio.to_html(fig, include_plotlyjs=True, full_html=False, config={"displaylogo": False})
    summary = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in summary_pairs(inc))
    narrative = "".join(f"<p>{_e(p)}</p>" for p in inc["narrative"].split("\n") if p.strip())
    windows = "".join(f'<li class="{_e(k)}">{_e(t)}</li>' for k, t in window_sentences(b))
    causes = "".join(f"<li>{_e(c['message'])} ({_e(c['confidence'])}, {c['lead_s']:.1f} s before)</li>" for c in b.causes)
    advice = "".join(f"<li>{_e(a)}</li>" for a in advice_lines(inc))
    findings = "".join(
        f'<li><span class="sev sev-{_e(r["severity"])}">{_e(r["severity"])}</span> {_e(r["code"])}'
        f' {_e(r.get("instance") or "")}: {_e(r["message"])}</li>' for r in b.evidence)
    evidence = "".join(f"<h3>{_e(name)}</h3>" + html_table(cols, got, f"ev-{name}") for name, cols, got in evidence_sections(b))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; font-src data:">
<title>{_e("Post-incident report: " + inc["title"])}</title><style>{CSS}</style></head>
<body>
<h1 id="title"><span class="sev sev-{_e(inc["severity"])}">{_e(inc["severity"])}</span> {_e(inc["title"])}</h1>
<p class="muted">{_e(generated_line())} from the gold tables incidents, incident_evidence and the findings they name.</p>
<h2>Summary</h2><table id="summary">{summary}</table>
<h2>What happened</h2><div id="narrative">{narrative}</div>
<h2>Timeline</h2>
<ul id="windows">{windows}</ul>
<div id="figure">{figure_html}</div>
<h2>Findings</h2><ul id="findings">{findings}</ul>
<h2>Probable causes</h2>{f'<ul id="causes">{causes}</ul>' if causes else '<p>none found in finding_causes</p>'}
<h2>Configuration advice</h2><ul id="advice">{advice}</ul>
<h2>Evidence</h2>{evidence}
</body></html>
"""


# --- Markdown ----------------------------------------------------------------------------------------------


def md_text(v: object) -> str:
    """A Markdown-safe inline text: HTML escaped, Markdown markup characters backslash-escaped."""
    text = html.escape(printable(value_text(v).replace("\n", " ")), quote=False)
    for ch in "\\`*_[]|#!":
        text = text.replace(ch, "\\" + ch)
    return text


def md_table(columns: list[str], rows: list[dict]) -> str:
    head = "| " + " | ".join(md_text(c) for c in columns) + " |"
    sep = "|" + "---|" * len(columns)
    body = ["| " + " | ".join(md_text(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def render_md(b: IncidentBundle) -> str:
    inc = b.incident
    out = [f"# Post-incident report: {md_text(inc['title'])}", "", f"_{md_text(generated_line())}_", "", "## Summary", "",
           "| | |", "|---|---|"]
    out += [f"| {md_text(k)} | {md_text(v)} |" for k, v in summary_pairs(inc)]
    out += ["", "## What happened", ""] + [md_text(p) + "\n" for p in inc["narrative"].split("\n") if p.strip()]
    out += ["## Timeline", ""] + [f"- {md_text(t)}" for _, t in window_sentences(b)]
    out += ["", "The interactive timeline figure is in the HTML report (`--format html`).", "", "## Findings", ""]
    out += [f"- **{md_text(r['severity'])}** {md_text(r['code'])} {md_text(r.get('instance') or '')}: {md_text(r['message'])}"
            for r in b.evidence]
    out += ["", "## Probable causes", ""]
    out += [f"- {md_text(c['message'])} ({md_text(c['confidence'])}, {c['lead_s']:.1f} s before)" for c in b.causes] or ["none found in finding_causes"]
    out += ["", "## Configuration advice", ""] + [f"- {md_text(a)}" for a in advice_lines(inc)]
    out += ["", "## Evidence", ""]
    for name, cols, got in evidence_sections(b):
        out += [f"### {md_text(name)}", "", md_table(cols, got), ""]
    return "\n".join(out) + "\n"


def render(b: IncidentBundle, fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; use one of: {', '.join(FORMATS)}")
    return render_html(b) if fmt == "html" else render_md(b)
