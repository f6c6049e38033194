"""The matrix page (``reports/matrix/index.html``) in a real headless browser, as its readers open it: Debian's
``chromium`` driven by Selenium through ``chromedriver`` (no browser is downloaded). On the made-up releases of
``matrix_runs`` the table renders the expected rows, the filters hide rows, a click on a heading sorts and a click on a
cell's link opens the run's summary; on the committed page and on the made-up one every link leads to a file."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from specconform.harness import matrix

from . import matrix_runs

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="needs Debian's chromium and chromium-driver packages (apt-get install -y chromium chromium-driver)",
)
webdriver = pytest.importorskip(
    "selenium.webdriver", reason="needs selenium (the test extra: pip install -e '.[test]')"
)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ROWS = [("gizmo", "2.0"), ("toy", "0.9.0"), ("toy", "0.10.0"), ("toy", "0.11.0")]


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("published")
    engines, products = matrix_runs.build(root)
    _, html = matrix.write(engines, root / "reports" / "matrix", root, products)
    return html


@pytest.fixture
def opened(browser, page):
    browser.get(page.as_uri())
    return browser


def _shown(browser) -> list[tuple[str, str]]:
    """(engine, release) of each row the page shows, top to bottom."""
    rows = browser.find_elements(By.CSS_SELECTOR, "#matrix tbody tr")
    return [tuple(td.text for td in row.find_elements(By.TAG_NAME, "td")[:2]) for row in rows if row.is_displayed()]


def _cell(browser, release: str, cls: str):
    """The cell of class ``cls`` in the row of ``toy`` at ``release``."""
    headings = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#matrix thead th")]
    (row,) = [
        tr
        for tr in browser.find_elements(By.CSS_SELECTOR, "#matrix tbody tr")
        if [td.text for td in tr.find_elements(By.TAG_NAME, "td")[:2]] == ["toy", release]
    ]
    return row.find_elements(By.TAG_NAME, "td")[headings.index(cls)]


def _heading(browser, text: str):
    (th,) = [th for th in browser.find_elements(By.CSS_SELECTOR, "#matrix thead th") if th.text.startswith(text)]
    return th


def test_the_table_renders_a_row_per_engine_and_release_with_the_records_verdicts(opened):
    assert _shown(opened) == ROWS
    assert _cell(opened, "0.9.0", "tb.core").text.startswith("FAILS")
    assert _cell(opened, "0.10.0", "rs.seeded").text == "NOT JUDGED"
    assert _cell(opened, "0.11.0", "rs.seeded").text == "CONFORMS"
    assert opened.find_element(By.ID, "shown").text == "4 of 4 rows shown"


def test_filters_hide_the_rows_that_do_not_match(opened):
    opened.find_element(By.ID, "f-text").send_keys("0.10")
    assert _shown(opened) == [("toy", "0.10.0")]
    assert opened.find_element(By.ID, "shown").text == "1 of 4 rows shown"
    opened.find_element(By.ID, "f-text").clear()
    Select(opened.find_element(By.ID, "f-engine")).select_by_visible_text("gizmo")
    assert _shown(opened) == [("gizmo", "2.0")]
    Select(opened.find_element(By.ID, "f-engine")).select_by_visible_text("all")
    Select(opened.find_element(By.ID, "f-verdict")).select_by_visible_text("FAILS (known)")
    assert _shown(opened) == [("toy", "0.9.0"), ("toy", "0.10.0"), ("toy", "0.11.0")]
    Select(opened.find_element(By.ID, "f-verdict")).select_by_visible_text("NOT JUDGED")
    assert _shown(opened) == [("toy", "0.10.0")]


def test_a_click_on_a_heading_sorts_by_it_and_a_second_click_reverses(opened):
    _heading(opened, "release").click()  # as numbers: 0.9 < 0.10 < 0.11 < 2.0
    assert _shown(opened) == [("toy", "0.9.0"), ("toy", "0.10.0"), ("toy", "0.11.0"), ("gizmo", "2.0")]
    _heading(opened, "release").click()
    assert _shown(opened) == [("gizmo", "2.0"), ("toy", "0.11.0"), ("toy", "0.10.0"), ("toy", "0.9.0")]
    _heading(opened, "tb.core").click()  # the worst verdict first; equal ones keep their order
    assert _shown(opened) == [("toy", "0.9.0"), ("toy", "0.11.0"), ("gizmo", "2.0"), ("toy", "0.10.0")]


def test_a_click_on_a_cell_opens_the_runs_summary(opened, page):
    _cell(opened, "0.9.0", "tb.core").find_element(By.TAG_NAME, "a").click()
    summary = page.parent.parent / "engines" / "toy-0.9" / matrix_runs.STAMPS["0.9.0"] / "summary.md"
    assert opened.current_url == summary.resolve().as_uri()
    assert opened.find_element(By.TAG_NAME, "body").text.startswith("# specconform conformance report")


def _targets(browser, page: Path) -> list[Path]:
    browser.get(page.resolve().as_uri())
    hrefs = browser.execute_script("return Array.from(document.querySelectorAll('a')).map(a => a.href)")
    assert hrefs and all(h.startswith("file://") for h in hrefs), [h for h in hrefs if not h.startswith("file://")]
    return [Path(unquote(urlparse(href).path)) for href in hrefs]


@pytest.mark.parametrize("which", ["made-up", "committed"])
def test_every_link_leads_to_a_file(browser, page, which):
    shown = page if which == "made-up" else ROOT / "reports" / "matrix" / "index.html"
    targets = _targets(browser, shown)
    assert [t for t in targets if not t.is_file()] == []
    if which == "committed":  # each published run's summary is reachable from the page
        summaries = {p.resolve() for p in (ROOT / "reports" / "engines").glob("*/*/summary.md")}
        assert {t for t in targets if t.name == "summary.md"} <= summaries
        md = (ROOT / "reports" / "matrix" / "matrix.md").read_text().split("## Matrix\n", 1)[1].split("\n## ", 1)[0]
        rows = [line for line in md.splitlines() if line.startswith("| ")][2:]  # the heading and its rule left out
        assert len(browser.find_elements(By.CSS_SELECTOR, "#matrix tbody tr")) == len(rows) > 0
