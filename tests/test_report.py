"""The post-incident report (HTML and Markdown) on tiny gold tables: sections, self-containment,
escaping of user-controlled names."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from dashboards import data as D
from dashboards.report import EVIDENCE_TABLES, md_text, render, render_md
from tests.test_dashboard import INCIDENT, XSS, tiny_lakehouse


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return D.load_incident(D.Gold(tiny_lakehouse(tmp_path_factory.mktemp("report") / "lh")), INCIDENT)


class Elements(HTMLParser):
    """Tags and attributes of a document, as a browser's parser sees them."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(doc: str) -> Elements:
    p = Elements()
    p.feed(doc)
    return p


def test_html_report_has_every_section_and_the_embedded_figure(bundle):
    doc = render(bundle, "html")
    for section in ("Summary", "What happened", "Timeline", "Findings", "Probable causes", "Configuration advice", "Evidence"):
        assert f"<h2>{section}</h2>" in doc
    assert "certain 2026-11-23 11:00:06.009 UTC → 2026-11-23 11:00:11.004 UTC" in doc
    assert "art-a paused 7.0 s in a full GC at 11:00:04" in doc  # the cause
    assert "Enable a quorum of at least 3 pairs." in doc
    assert 'id="ev-split_brain_windows"' in doc and 'id="ev-gc_findings"' in doc
    assert "Plotly.newPlot" in doc or "Plotly.react" in doc


def test_html_report_is_self_contained(bundle):
    p = parse(render(bundle, "html"))
    external = [(t, a) for t, a in p.tags for k in ("src", "href") if re.match(r"^(https?:)?//", a.get(k) or "")]
    assert external == []
    scripts = [a for t, a in p.tags if t == "script"]
    assert scripts and not any("src" in a for a in scripts)  # plotly.js inline
    csp = [a["content"] for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]  # and the browser may not fetch anything either


def test_html_report_escapes_user_names(bundle):
    p = parse(render(bundle, "html"))
    assert not [a for t, a in p.tags if t == "img"]
    assert any(XSS in t for t in p.text)  # shown as the characters it is made of


def test_markdown_report_has_sections_and_escapes(bundle):
    md = render_md(bundle)
    assert md.startswith("# Post-incident report: split brain in pair (certain, 5.0 s)")
    for section in ("## Summary", "## What happened", "## Timeline", "## Findings", "## Probable causes",
                    "## Configuration advice", "## Evidence", "### split\\_brain\\_windows"):
        assert section in md
    assert "<img" not in md and "&lt;img src=x onerror=" in md
    (row,) = [line for line in md.splitlines() if line.startswith("| no-consumers")]  # stuck_messages table
    assert len(re.findall(r"(?<!\\)\|", row)) == len(EVIDENCE_TABLES["stuck_messages"]) + 1  # no stray cell


def test_markdown_cells_cannot_break_the_table_or_inject_links():
    assert md_text("a|b") == "a\\|b"
    assert md_text("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    assert md_text("<b>\nnext") == "&lt;b&gt; next"


def test_unknown_format_is_refused(bundle):
    with pytest.raises(ValueError, match="use one of: html, md"):
        render(bundle, "pdf")
