"""Reports rendered from the JSON-lines record: Markdown, JUnit XML, self-contained HTML, run diffs."""

from __future__ import annotations

import html
import math
from collections import defaultdict
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from . import spec
from .core import BAD, SEVERITY, worst

ORDER = SEVERITY


def _first_line(text: str) -> str:
    return (text or "").splitlines()[0][:240] if text else ""


def _is_regression(r: dict) -> bool:
    return bool(r.get("unexpected"))


def _sorted(records):
    return sorted(records, key=lambda r: (ORDER.get(r["status"], 9), r["engine"], r["check"]))


def requirement_status(records: list[dict]) -> dict[tuple[str, str], tuple[str, int]]:
    """``{(engine, requirement): (status, cases)}``: the worst status among the checks' results for
    it, and the cases that exercised it. PASS needs cases > 0 and no violation anywhere; a requirement
    that no check reached is NOT_RUN."""
    statuses: dict[tuple[str, str], list[str]] = defaultdict(list)
    cases: dict[tuple[str, str], int] = defaultdict(int)
    for r in records:
        for rid, result in r["results"].items():
            key = (r["engine"], rid)
            statuses[key].append(result["status"])
            cases[key] += result["cases"]
    out = {}
    for key, found in statuses.items():
        status = worst(found)
        if status == "PASS" and not cases[key]:
            status = "NOT_RUN"
        # a requirement judged PASS by one check and not reached by another is PASS: it was exercised
        if status == "NOT_RUN" and "PASS" in found and cases[key]:
            status = "PASS"
        out[key] = (status, cases[key])
    return out


def _class_table(records: list[dict], engines: list[str]) -> list[str]:
    """Rows: conformance classes; cells: the worst requirement status of the class per engine."""
    per_req = requirement_status(records)
    registry = spec.load_registry()
    lines = ["| class | " + " | ".join(engines) + " |", "| --- |" + " --- |" * len(engines)]
    for cls in sorted({r["cls"] for r in records}):
        cells = []
        for engine in engines:
            found = [
                per_req[(engine, rid)][0] for rid in registry if registry[rid].cls == cls and (engine, rid) in per_req
            ]
            found += [r["status"] for r in records if r["engine"] == engine and r["cls"] == cls and not r["results"]]
            cells.append(worst(found) if found else "-")
        lines.append(f"| {cls} | " + " | ".join(cells) + " |")
    return lines


def _requirement_table(records: list[dict], engines: list[str], missing: str) -> list[str]:
    """Rows: requirements, failures first; cells: each engine's status on it with the cases that
    exercised it (``missing`` if no check covers it)."""
    per_req = requirement_status(records)
    registry = spec.load_registry()
    rank = {
        rid: min((ORDER[per_req[(e, rid)][0]] for e in engines if (e, rid) in per_req), default=9) for rid in registry
    }
    lines = ["| requirement | level | " + " | ".join(engines) + " |", "| --- | --- |" + " --- |" * len(engines)]
    for rid in sorted(registry, key=lambda x: (rank[x], x)):
        cells = []
        for e in engines:
            if (e, rid) not in per_req:
                cells.append(missing)
                continue
            status, cases = per_req[(e, rid)]
            cells.append(f"{status} ({cases})" if status in ("PASS", "FAIL") else status)
        lines.append(f"| {rid} | {registry[rid].level} | " + " | ".join(cells) + " |")
    return lines


def _requirement_cells(r: dict) -> str:
    """Each requirement of a record with its own status: violated ones in bold."""
    out = []
    for rid in r["requirements"] + [x for x in r["results"] if x not in r["requirements"]]:
        result = r["results"].get(rid, {"status": r["status"], "cases": 0})
        text = f"{rid} {result['status']}" + (f" ({result['cases']})" if result["status"] in ("PASS", "FAIL") else "")
        out.append(f"**{text}**" if result["status"] == "FAIL" else text)
    return ", ".join(out)


def _incomplete(missing: list[str]) -> list[str]:
    if not missing:
        return []
    shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
    return [f"**INCOMPLETE RUN: {len(missing)} selected checks have no record**: {shown}", ""]


def markdown(records: list[dict], uncovered: list[str], missing: list[str] = ()) -> str:
    engines = sorted({r["engine"] for r in records})
    lines = ["# specconform conformance report", ""] + _incomplete(list(missing))
    for engine in engines:
        mine = [r for r in records if r["engine"] == engine]
        counts = defaultdict(int)
        for r in mine:
            counts[r["status"]] += 1
        first = mine[0]
        regressions = sum(_is_regression(r) for r in mine)
        unexpected = sum(r["status"] == "PASS" and r.get("expected_status") not in (None, "PASS") for r in mine)
        lines += [
            f"## {engine} ({first['engine_version']}, {first['device']}, profile {first['profile']})",
            "",
            " · ".join(f"**{k}** {counts[k]}" for k in ORDER if counts[k])
            + f" · unexpected failures {regressions} · unexpected passes {unexpected}",
            "",
        ]
        lines += ["| status | check | class | requirements | evidence |", "| --- | --- | --- | --- | --- |"]
        for r in _sorted(mine):
            status = r["status"] + (" (expected)" if r.get("expected_status") == r["status"] != "PASS" else "")
            if r["status"] == "PASS" and r.get("expected_status") not in (None, "PASS"):
                status = "PASS (unexpected)"
            reqs = _requirement_cells(r)
            lines.append(
                f"| {status} | `{r['check']}` | {r['cls']} | {reqs} | {_first_line(r['message']).replace('|', '/')} |"
            )
        lines.append("")
    lines += ["## Per conformance class", ""] + _class_table(records, engines)
    lines += ["", "## Per requirement", ""] + _requirement_table(records, engines, "not covered")
    if uncovered:
        lines += ["", f"**Not yet covered by any check** ({len(uncovered)}): " + ", ".join(uncovered)]
    return "\n".join(lines) + "\n"


def junit(records: list[dict], missing: list[str] = ()) -> str:
    """One test case per (check, requirement): FAIL is a failure, ERROR and TIMEOUT errors, NOT_RUN,
    NOT_CLAIMED and PRECONDITION_FAILED skipped; a selected check without a record is an error."""
    cases = []
    counts = defaultdict(int)
    for r in records:
        for rid, result in r["results"].items() or [("check", {"status": r["status"], "evidence": r["message"]})]:
            status = result["status"]
            detail = result.get("evidence") or r["message"]
            body = ""
            if status == "FAIL":
                text = escape(detail + "\n" + r["reproduce"])
                body = f"<failure message={quoteattr(_first_line(detail))}>{text}</failure>"
                counts["failures"] += 1
            elif status in ("ERROR", "TIMEOUT"):
                body = f"<error message={quoteattr(status + ': ' + _first_line(detail))}>{escape(detail)}</error>"
                counts["errors"] += 1
            elif status != "PASS":
                body = f"<skipped message={quoteattr(status + ': ' + _first_line(detail))}/>"
                counts["skipped"] += 1
            cases.append(
                f"  <testcase classname={quoteattr(r['engine'] + '.' + r['check'])} name={quoteattr(rid)} "
                f'time="{r["duration_s"]:.4f}">{body}</testcase>'
            )
    for item in missing:
        cases.append(
            f'  <testcase classname={quoteattr(item)} name="record"><error message="no record: the run ended '
            f'before this check was judged"/></testcase>'
        )
        counts["errors"] += 1
    return (
        f'<?xml version="1.0" encoding="utf-8"?>\n<testsuite name="specconform" tests="{len(cases)}" '
        f'failures="{counts["failures"]}" errors="{counts["errors"]}" skipped="{counts["skipped"]}">\n'
        + "\n".join(cases)
        + "\n</testsuite>\n"
    )


# ---------------------------------------------------------------------------------------------
# HTML with inline SVG plots


def _bars(title: str, series: dict[str, list[float]], labels: list[str], width=560, height=180) -> str:
    colours = ["#4C78A8", "#F58518", "#54A24B"]
    n = len(labels)
    top = max((v for values in series.values() for v in values if v == v), default=1.0) or 1.0
    group = (width - 40) / max(n, 1)
    bar = group / (len(series) + 1)
    parts = [
        f'<svg width="{width}" height="{height + 40}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="4" y="14" font-size="12">{html.escape(title)}</text>',
    ]
    for s, (name, values) in enumerate(series.items()):
        for i, v in enumerate(values):
            h = 0 if v != v else (v / top) * height
            x = 30 + i * group + s * bar
            parts.append(
                f'<rect x="{x:.1f}" y="{20 + height - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colours[s % 3]}"><title>{html.escape(name)} {labels[i]}: {v:.4f}</title></rect>'
            )
        parts.append(
            f'<text x="{width - 150}" y="{14 + 14 * s}" font-size="11" fill="{colours[s % 3]}">'
            f"{html.escape(name)}</text>"
        )
    for i, label in enumerate(labels):
        if n <= 40 or i % math.ceil(n / 40) == 0:
            parts.append(f'<text x="{30 + i * group:.1f}" y="{height + 34}" font-size="9">{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _trace(title: str, values: list[int], budget: int, forced: list[int], width=560, height=160) -> str:
    n = max(len(values), 1)
    top = max(max(values, default=1), budget, 1)
    pts = " ".join(
        f"{30 + i * (width - 40) / n:.1f},{20 + height - v / top * height:.1f}" for i, v in enumerate(values)
    )
    y_budget = 20 + height - budget / top * height
    marks = "".join(
        f'<circle cx="{30 + i * (width - 40) / n:.1f}" cy="{20 + height - values[i] / top * height:.1f}" '
        f'r="3" fill="#E45756"><title>forced at {i}</title></circle>'
        for i in forced
        if i < len(values)
    )
    return (
        f'<svg width="{width}" height="{height + 30}" xmlns="http://www.w3.org/2000/svg">'
        f'<text x="4" y="14" font-size="12">{html.escape(title)}</text>'
        f'<line x1="30" x2="{width - 10}" y1="{y_budget:.1f}" y2="{y_budget:.1f}" stroke="#999" '
        f'stroke-dasharray="4"/><polyline fill="none" stroke="#4C78A8" points="{pts}"/>{marks}</svg>'
    )


def _plots(record: dict) -> str:
    out = []
    for plot in record.get("plots") or []:
        if plot["kind"] == "distribution":
            for j, (target, seen) in enumerate(zip(plot["target"], plot["empirical"])):
                cells = sorted(range(len(target)), key=lambda x: -max(target[x], seen[x]))[:32]
                cells.sort()
                out.append(
                    _bars(
                        f"{plot['case']} position {j}: target vs empirical (p = {plot['positions'][j]['p_value']:.3g})",
                        {"target": [target[x] for x in cells], "empirical": [seen[x] for x in cells]},
                        [str(x) for x in cells],
                    )
                )
            out.append(
                _bars(
                    f"{plot['case']}: accepted length vs closed form",
                    {"closed form": plot["expected_lengths"], "observed": plot["lengths"]},
                    [str(a) for a in range(len(plot["lengths"]))],
                )
            )
        elif plot["kind"] == "budget-trace":
            out.append(_trace(plot["title"], plot["thinking"], plot["budget"], plot["forced"]))
    return "".join(out)


def html_report(
    records: list[dict], uncovered: list[str], missing: list[str] = (), zoo_table: list[dict] | None = None
) -> str:
    colours = {
        "PASS": "#d4edda",
        "FAIL": "#f8d7da",
        "ERROR": "#f5c6cb",
        "TIMEOUT": "#f5c6cb",
        "NOT_CLAIMED": "#e2e3e5",
        "PRECONDITION_FAILED": "#fff3cd",
    }
    rows = []
    for r in _sorted(records):
        details = html.escape(r["message"] or "")
        plots = _plots(r)
        extra = f"<details><summary>plots</summary>{plots}</details>" if plots else ""
        stat = "" if r.get("p_value") is None else f"p = {r['p_value']:.3g}, α = {r['alpha']:.2g}, N = {r['trials']}"
        requirements = html.escape(_requirement_cells(r)).replace("**", "")
        background = colours.get(r["status"], "#fff")
        rows.append(
            f'<tr style="background:{background}"><td>{r["status"]}</td><td>{html.escape(r["engine"])}</td>'
            f"<td><code>{html.escape(r['check'])}</code></td><td>{html.escape(r['cls'])}</td><td>{requirements}</td>"
            f'<td><pre style="white-space:pre-wrap;margin:0">{details}</pre>{stat}{extra}'
            f'<div style="color:#666;font-size:11px">{html.escape(r["reproduce"])}</div></td></tr>'
        )
    zoo = ""
    if zoo_table:
        zoo_rows = "".join(
            f'<tr style="background:{"#d4edda" if z["caught"] else "#f8d7da"}"><td>{html.escape(z["mutant"])}</td>'
            f"<td>{html.escape(z['description'])}</td><td>{z['breaks']}</td><td>{'yes' if z['caught'] else 'NO'}</td>"
            f"<td>{html.escape(', '.join(z['caught_by']))}</td></tr>"
            for z in zoo_table
        )
        zoo = (
            "<h2>Bug zoo: catch table</h2><table><tr><th>mutant</th><th>bug</th><th>breaks</th><th>caught</th>"
            f"<th>failing checks</th></tr>{zoo_rows}</table>"
        )
    uncovered_html = f"<p><b>Not yet covered by any check:</b> {', '.join(uncovered)}</p>" if uncovered else ""
    incomplete = "".join(
        f"<p style='color:#a00'>{html.escape(line)}</p>" for line in _incomplete(list(missing)) if line
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>specconform report</title><style>"
        "body{font-family:sans-serif;margin:20px}table{border-collapse:collapse;width:100%}"
        "td,th{border:1px solid #ccc;padding:4px;vertical-align:top;font-size:13px}</style></head><body>"
        f"<h1>specconform conformance report</h1>{incomplete}{zoo}<h2>Results</h2><table><tr><th>status</th>"
        f"<th>engine</th><th>check</th><th>class</th><th>requirements</th><th>evidence</th></tr>{''.join(rows)}</table>"
        f"{uncovered_html}</body></html>\n"
    )


def write_all(
    run_dir: Path, records: list[dict], uncovered: list[str], missing: list[str] = (), zoo_table=None
) -> None:
    (run_dir / "summary.md").write_text(markdown(records, uncovered, missing))
    (run_dir / "junit.xml").write_text(junit(records, missing))
    (run_dir / "report.html").write_text(html_report(records, uncovered, missing, zoo_table))


# ---------------------------------------------------------------------------------------------
# Diff between two runs


def _bad_results(records: list[dict]) -> dict[tuple[str, str, str], dict]:
    """``{(engine, check, requirement or "check"): record}`` for every failed requirement and every
    check that ended in ERROR or TIMEOUT."""
    out = {}
    for r in records:
        for rid, result in r["results"].items():
            if result["status"] == "FAIL":
                out[(r["engine"], r["check"], rid)] = r
        if r["status"] in ("ERROR", "TIMEOUT"):
            out[(r["engine"], r["check"], "check")] = r
    return out


def diff(old: list[dict], new: list[dict]) -> tuple[str, int]:
    """New failures first (per requirement), then fixes, then changes in statistics; returns
    (Markdown, new failures)."""
    key = lambda r: (r["engine"], r["check"])  # noqa: E731
    before = {key(r): r for r in old}
    after = {key(r): r for r in new}
    bad_before, bad_after = _bad_results(old), _bad_results(new)
    new_failures = [(k, r) for k, r in bad_after.items() if k not in bad_before]
    fixes = [(k, r) for k, r in bad_before.items() if k not in bad_after and (k[0], k[1]) in after]
    changed = {(k[0], k[1]) for k, _ in new_failures + fixes}
    other = [
        (before[k], r)
        for k, r in after.items()
        if k in before and r["status"] != before[k]["status"] and k not in changed
    ]
    stats = [
        (before[k], r)
        for k, r in after.items()
        if k in before
        and r.get("p_value") is not None
        and before[k].get("p_value") is not None
        and r["p_value"] != before[k]["p_value"]
    ]
    gone = [r for k, r in before.items() if k not in after]
    sections = {
        "New failures": [
            # the whole first line of the evidence: a cut would end a list of ids mid-way
            f"- `{check}` {rid} ({engine}): {r['status']} "
            f"{((r['results'].get(rid, {}).get('evidence') or r['message'] or '').splitlines() or [''])[0]}"
            for (engine, check, rid), r in new_failures
        ],
        "Fixes": [
            f"- `{check}` {rid} ({engine}): now "
            f"{after[(engine, check)]['results'].get(rid, {}).get('status', after[(engine, check)]['status'])}"
            for (engine, check, rid), _ in fixes
        ],
        "Changes in statistics": [
            f"- `{r['check']}` ({r['engine']}): p {b['p_value']:.3g} → {r['p_value']:.3g}" for b, r in stats
        ],
        "Other status changes": [f"- `{r['check']}` ({r['engine']}): {b['status']} → {r['status']}" for b, r in other]
        + [f"- `{r['check']}` ({r['engine']}): no longer run" for r in gone],
    }
    lines = [f"# specconform diff: {len(new_failures)} new failures, {len(fixes)} fixes", ""]
    for title, entries in sections.items():  # a section with nothing in it is left out
        if entries:
            lines += [f"## {title}", "", *entries, ""]
    if not any(sections.values()):
        lines += ["No change in any status or statistic.", ""]
    return "\n".join(lines), len(new_failures)


def engines_summary(records: list[dict]) -> str:
    """The cross-engine table (rows: classes, then requirements; columns: engines), then every
    failure with its one-line reproduction and, where an expectation file traced it, the cause."""
    engines = sorted({r["engine"] for r in records})
    versions = {r["engine"]: r["engine_version"] for r in records}
    lines = ["# Engines judged by specconform", "", "| engine | version | profile |", "| --- | --- | --- |"]
    lines += [f"| {e} | {versions[e]} | {next(r['profile'] for r in records if r['engine'] == e)} |" for e in engines]
    lines += ["", "## Conformance classes (worst status of the class's checks)", ""] + _class_table(records, engines)
    lines += ["", "## Requirements", ""] + _requirement_table(records, engines, "-")
    lines += ["", "## Failures", ""]
    for r in _sorted(records):
        if r["status"] not in BAD:
            continue
        cause = f" Cause: {r['expectation_reason']}" if r.get("expectation_reason") else ""
        link = f" ({r['expectation_link']})" if r.get("expectation_link") else ""
        lines.append(
            f"- **{r['engine']}** `{r['check']}` {r['status']} on "
            f"{', '.join(r['violated'] or r['requirements'])}: {_first_line(r['message'])}.{cause}{link}  "
        )
        lines.append(f"  `{r['reproduce']}`")
    return "\n".join(lines) + "\n"
