"""The self-contained HTML page of a run (``report.html``)."""

from __future__ import annotations

import html
import re

from .. import findings, spec
from .svg import _plots
from .tables import _cell_text, _requirement_rows, _uncovered_lines
from .text import (
    ORDER,
    _check_status,
    _count,
    _evidence,
    _first_line,
    _incomplete,
    _own_reproduction,
    _sorted,
    _status_counts,
    also_failing,
)
from .verdicts import _class_cells, _not_claimed_line, engine_verdicts, run_verdict

_COLOURS = {
    "PASS": "#d4edda",
    "FAIL": "#f8d7da",
    "ERROR": "#f5c6cb",
    "TIMEOUT": "#f5c6cb",
    "NOT_RUN": "#fde2c8",
    "NOT_CLAIMED": "#e2e3e5",
    "PRECONDITION_FAILED": "#fff3cd",
}


_REQUIREMENT_ITEM = re.compile(r"^- \*\*(?P<id>(?:TB|RS|AC|API|STAT|RUN)-[A-Z]+-\d+)\*\*")


def requirement_texts() -> dict[str, tuple[str, str]]:
    """``{requirement id: (document, its text)}``, the text being the requirement's list item in the
    normative Markdown (``specs/*.md``), continuation lines included."""
    out: dict[str, tuple[str, str]] = {}
    for document in spec.SPEC_DOCUMENTS:
        current = None
        for line in (spec.spec_dir() / document).read_text().splitlines():
            match = _REQUIREMENT_ITEM.match(line)
            if match:
                current = match["id"]
                out[current] = (document, line[2:])
            elif current and line.startswith("  ") and line.strip():
                out[current] = (document, out[current][1] + " " + line.strip())
            else:
                current = None
    return out


_FILTER_SCRIPT = """
function applyFilters() {
  var value = function (id) { return document.getElementById(id).value.trim().toUpperCase(); };
  var status = value('f-status'), cls = value('f-class'), engine = value('f-engine'), req = value('f-req');
  document.querySelectorAll('tr[data-statuses]').forEach(function (tr) {
    var has = function (key, wanted) {
      return !wanted || tr.getAttribute(key).toUpperCase().indexOf('|' + wanted + '|') >= 0;
    };
    var shown = has('data-statuses', status) && has('data-cls', cls) && has('data-engines', engine)
      && (!req || tr.getAttribute('data-reqs').toUpperCase().indexOf(req) >= 0);
    tr.style.display = shown ? '' : 'none';
  });
}
"""


def _data(statuses, classes, engines, requirements) -> str:
    def joined(values) -> str:
        return html.escape("|" + "|".join(dict.fromkeys(values)) + "|", quote=True)

    return (
        f' data-statuses="{joined(statuses)}" data-cls="{joined(classes)}" data-engines="{joined(engines)}"'
        f' data-reqs="{html.escape(" ".join(requirements), quote=True)}"'
    )


def _select(ident: str, label: str, options) -> str:
    items = "".join(f"<option>{html.escape(o)}</option>" for o in options)
    return (
        f"<label>{label} <select id='{ident}' onchange='applyFilters()'><option value=''>all</option>{items}"
        "</select></label> "
    )


def _req_links(requirements) -> str:
    return ", ".join(f"<a href='#spec-{html.escape(rid)}'>{html.escape(rid)}</a>" for rid in requirements)


def _html_failure(record: dict, rid: str, index: dict[int, int]) -> str:
    what = f"{record['status']} on <a href='#spec-{rid}'>{rid}</a>" if rid != "check" else record["status"]
    own = _own_reproduction(record, rid)
    reproduction = f" · <a href='{html.escape(own, quote=True)}'>minimal reproduction</a>" if own else ""
    return (
        f"<li><b>{html.escape(record['engine'])}</b> <code>{html.escape(record['check'])}</code> {what}: "
        f"{html.escape(_evidence(record, rid))} · <a href='#check-{index[id(record)]}'>evidence</a>{reproduction}"
        f"</li>"
    )


def html_report(
    records: list[dict],
    uncovered: list[str],
    missing: list[str] = (),
    zoo_table: list[dict] | None = None,
    spec_href: str = "specs",
) -> str:
    """A self-contained page (no external resource; inline SVG plots, a small inline script for the
    filters): the verdict, the failures with links to their evidence, minimal reproduction and spec
    text, then the class, requirement and check tables, which filter by status, class, engine and
    requirement. ``spec_href`` is the path from the page to ``specs/``."""
    verdicts = engine_verdicts(records)
    engines = [v.engine for v in verdicts]
    passed, line = run_verdict(verdicts, list(missing))
    ordered = _sorted(records)
    index = {id(r): i for i, r in enumerate(ordered)}
    texts = requirement_texts()
    esc = html.escape

    engine_rows = "".join(
        f"<tr><td>{esc(v.engine)}</td><td>{_md_bold(v.headline)}</td><td>{esc(_status_counts(v.counts))}</td>"
        f"<td>{esc(v.version)}; {esc(v.device)}; profile {esc(v.profile)}</td></tr>"
        for v in verdicts
    )
    parts = [
        f"<h1>specconform conformance report</h1><p class='verdict {'pass' if passed else 'fail'}'>"
        f"<b>Verdict: {'PASS' if passed else 'FAIL'}</b>: {esc(line)}.</p>",
        "<table><tr><th>engine</th><th>verdict</th><th>checks by status</th><th>version, device, profile</th></tr>"
        f"{engine_rows}</table>",
    ]
    parts += [f"<p style='color:#a00'>{esc(text)}</p>" for text in _incomplete(list(missing)) if text]
    found = findings.findings(records)
    if found:  # one entry per defect, as summary.md lists them (RUN-FINDING-2)
        items = "".join(
            f"<li><b>{esc(f.engine)}</b> {'known' if f.expected else '<b>unexpected</b>'} finding <b>{esc(f.name)}</b> "
            f"({esc(f.seen_by + also_failing(f))}): "
            f"<ul>{''.join(_html_failure(r, rid, index) for r, rid in f.records)}</ul>"
            + (f"Cause: {esc(_first_line(f.cause, 400))}" if f.cause else "")
            + "</li>"
            for f in found
        )
        parts.append(f"<h2>Findings ({esc(_count(len(found), 'defect'))})</h2><ul>{items}</ul>")
    errors = [(r, "check") for r in ordered if r["status"] in ("ERROR", "TIMEOUT")]
    if errors:
        parts.append(f"<h2>ERROR and TIMEOUT</h2><ul>{''.join(_html_failure(r, rid, index) for r, rid in errors)}</ul>")
    outside = findings.not_applicable(records)
    if outside:
        items = "".join(
            f"<li><b>{esc(engine)}</b> {esc(rid)}: {esc(_first_line(why, 300))}</li>"
            for engine, pairs in sorted(outside.items())
            for rid, why in pairs
        )
        parts.append(f"<h2>Outside the engine's contract (NOT_APPLICABLE)</h2><ul>{items}</ul>")
    passes = [r for v in verdicts for r in v.unexpected_passes]
    if passes:
        items = "".join(
            f"<li><b>{esc(r['engine'])}</b> <a href='#check-{index[id(r)]}'><code>{esc(r['check'])}</code></a> "
            f"PASS, expected {esc(r['expected_status'])}</li>"
            for r in passes
        )
        parts.append(f"<h2>Unexpected passes</h2><ul>{items}</ul>")
    for v in verdicts:
        claimed = "".join(f"<li>{esc(c.cls)}: <b>{esc(c.verdict)}</b> ({esc(c.why)})</li>" for c in v.claimed)
        unclaimed = "".join(f"<li>{esc(line)}</li>" for line in _not_claimed_line(v))
        parts.append(f"<h3>{esc(v.engine)}: {_md_bold(v.headline)}</h3><ul>{claimed}{unclaimed}</ul>")
    if zoo_table:
        zoo_rows = "".join(
            f'<tr style="background:{"#d4edda" if z["caught"] else "#f8d7da"}"><td>{esc(z["mutant"])}</td>'
            f"<td>{esc(z['description'])}</td><td>{z['breaks']}</td><td>{'yes' if z['caught'] else 'NO'}</td>"
            f"<td>{esc(', '.join(z['caught_by']))}</td></tr>"
            for z in zoo_table
        )
        parts.append(
            "<h2>Bug zoo: catch table</h2><table><tr><th>mutant</th><th>bug</th><th>breaks</th><th>caught</th>"
            f"<th>failing checks</th></tr>{zoo_rows}</table>"
        )

    classes = sorted({r["cls"] for r in records})
    parts.append(
        "<h2>Filter</h2><p>"
        + _select("f-status", "status", ORDER)
        + _select("f-class", "class", classes)
        + _select("f-engine", "engine", engines)
        + "<label>requirement <input id='f-req' oninput='applyFilters()' placeholder='e.g. TB-FORCE'></label></p>"
    )
    cells = _class_cells(records, engines)
    class_rows = []
    for cls in classes:
        found = [(e, cells[(cls, e)]) for e in engines if (cls, e) in cells]
        statuses = [c.status for _, c in found]
        tds = "".join(
            f"<td style='background:{_COLOURS.get(c.status, '#fff')}' title='{esc(c.why, quote=True)}'>"
            f"{esc(c.verdict)}</td>"
            if c
            else "<td>-</td>"
            for c in (cells.get((cls, e)) for e in engines)
        )
        reqs = sorted({rid for r in records if r["cls"] == cls for rid in r["results"]})
        class_rows.append(f"<tr{_data(statuses, [cls], engines, reqs)}><td>{esc(cls)}</td>{tds}</tr>")
    head = "".join(f"<th>{esc(e)}</th>" for e in engines)
    parts.append(
        "<h2>Per conformance class</h2><p>Hover a cell for the reason.</p>"
        f"<table><tr><th>class</th>{head}</tr>{''.join(class_rows)}</table>"
    )
    req_rows = []
    for rid, level, cls, _, row in _requirement_rows(records, engines, uncovered):
        statuses = [c[0] for c in row if isinstance(c, tuple)] or ["NOT_RUN"]
        tds = "".join(
            f"<td style='background:{_COLOURS.get(c[0], '#fff') if isinstance(c, tuple) else '#fff'}'>"
            f"{esc(_cell_text(c))}</td>"
            for c in row
        )
        req_rows.append(
            f"<tr{_data(statuses, [cls], engines, [rid])}><td><a href='#spec-{rid}'>{rid}</a></td><td>{level}</td>"
            f"{tds}</tr>"
        )
    parts.append(
        "<h2>Per requirement</h2>"
        f"<table><tr><th>requirement</th><th>level</th>{head}</tr>{''.join(req_rows)}</table>"
        + "".join(f"<p>{_md_bold(text)}</p>" for text in _uncovered_lines(uncovered) if text)
    )
    check_rows = []
    for i, r in enumerate(ordered):
        if r["status"] == "NOT_CLAIMED":  # summed up per class above
            continue
        plots = _plots(r)
        extra = f"<details><summary>plots</summary>{plots}</details>" if plots else ""
        stat = "" if r.get("p_value") is None else f"p = {r['p_value']:.3g}, α = {r['alpha']:.2g}, N = {r['trials']}"
        failed = "".join(
            f"<div><b>{rid}</b>: {esc(result.get('evidence', ''))}</div>"
            for rid, result in r["results"].items()
            if result["status"] == "FAIL"
        )
        reproduction = "".join(
            f"<div><a href='{esc(own, quote=True)}'>minimal reproduction of {esc(rid)}</a></div>"
            for rid in r["results"]
            if (own := _own_reproduction(r, rid))
        )
        statuses = [r["status"], *(result["status"] for result in r["results"].values())]
        check_rows.append(
            f"<tr id='check-{i}' style='background:{_COLOURS.get(r['status'], '#fff')}'"
            f"{_data(statuses, [r['cls']], [r['engine']], list(r['results']) or r['requirements'])}>"
            f"<td>{esc(_check_status(r))}</td><td>{esc(r['engine'])}</td><td><code>{esc(r['check'])}</code></td>"
            f"<td>{esc(r['cls'])}</td><td>{_req_links(r['results'] or r['requirements'])}</td>"
            f'<td><pre style="white-space:pre-wrap;margin:0">{esc(r["message"] or "")}</pre>{failed}{stat}{extra}'
            f'{reproduction}<div style="color:#666;font-size:11px">{esc(r["reproduce"])}</div></td></tr>'
        )
    parts.append(
        "<h2>Checks judged</h2><p>NOT_CLAIMED checks are summed up per class above.</p>"
        "<table><tr><th>status</th><th>engine</th><th>check</th><th>class</th><th>requirements</th>"
        f"<th>evidence</th></tr>{''.join(check_rows)}</table>"
    )
    cited = sorted({rid for r in records for rid in [*r["requirements"], *r["results"]]} | set(uncovered))
    spec_items = "".join(
        f"<dt id='spec-{rid}'><b>{rid}</b> (<a href='{esc(spec_href, quote=True)}/{texts[rid][0]}'>"
        f"specs/{texts[rid][0]}</a>)</dt><dd>{esc(texts[rid][1])}</dd>"
        for rid in cited
        if rid in texts
    )
    parts.append(f"<h2>Spec text</h2><dl>{spec_items}</dl>")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>specconform report</title><style>"
        "body{font-family:sans-serif;margin:20px}table{border-collapse:collapse;width:100%;margin-bottom:12px}"
        "td,th{border:1px solid #ccc;padding:4px;vertical-align:top;font-size:13px}"
        ".verdict{font-size:18px;padding:8px}.pass{background:#d4edda}.fail{background:#f8d7da}"
        f"dd{{margin-bottom:8px}}</style><script>{_FILTER_SCRIPT}</script></head><body>"
        + "".join(parts)
        + "</body></html>\n"
    )


def _md_bold(text: str) -> str:
    """Markdown ``**bold**`` (as in the verdict lines) as HTML, the rest escaped."""
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))
