"""The README and docs/ link only to files and headings that exist, and the README fits on one page."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors of a Markdown page's headings: lower case, punctuation dropped, spaces as dashes."""
    headings = (line.lstrip("#").strip() for line in page.read_text().splitlines() if line.startswith("#"))
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+://", link):
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target) if target else page
        missing_heading = anchor and path.suffix == ".md" and path.exists() and anchor not in heading_anchors(path)
        if not path.exists() or missing_heading:
            broken.append(link)
    assert not broken, f"{page.name}: links to nothing: {broken}"


def test_readme_fits_on_one_page():
    assert len((ROOT / "README.md").read_text().splitlines()) < 200, "README.md: move the detail to docs/"
