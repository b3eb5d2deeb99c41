"""The search preview dashboard at `/`, in a real browser: headless Chromium driven by Selenium.

A real server holds 200 movies (`movies_subset.json.gz`, see README.md beside it) with `genres`
filterable and a few sortable attributes. The page is opened, the index picked, a query typed key by
key; the first hit, the highlights (`<mark>`), the ranking score, a genre refinement, a sort and the hits
per page are checked against the answers of the same server's own search route (not hard-coded). A
second test runs the server in production with a master key: the page asks for a key, refuses a wrong
one, and searches once given the right one. Screenshots land in the test's tmp dir (the path is printed).

Needs Debian's `chromium` and `chromium-driver` (or `HANZO_CHROMIUM` / `HANZO_CHROMEDRIVER` pointing at
a Chromium and its driver); without them the tests fail saying so, unless `HANZO_SKIP_BROWSER=1`.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import MASTER_KEY, ServerProcess, wait_task

pytestmark = pytest.mark.timeout(300)

HERE = Path(__file__).resolve().parent
CHROMIUM = Path(os.environ.get("HANZO_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("HANZO_CHROMEDRIVER", "/usr/bin/chromedriver"))
CHROME_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1440,1100",
)
WAIT = 30.0  # seconds for the page to show what is awaited (two shared cores, a cold browser)

INDEX = "movies"
OTHER_INDEX = "a_notes"  # listed first, so the dashboard opens it and the test has to pick `movies`
SETTINGS = {"filterableAttributes": ["genres"], "sortableAttributes": ["vote_average", "popularity", "title"]}
QUERY = "space mission"


def load_movies() -> list[dict[str, Any]]:
    with gzip.open(HERE / "movies_subset.json.gz", "rt", encoding="utf-8") as f:
        movies: list[dict[str, Any]] = json.load(f)
    return movies


def require_browser() -> None:
    if os.environ.get("HANZO_SKIP_BROWSER") == "1":
        pytest.skip("HANZO_SKIP_BROWSER=1: the dashboard's browser tests are skipped")
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.fail("the dashboard's browser test needs Selenium (`pip install -e '.[test]'`)", pytrace=False)
    if missing:
        pytest.fail(
            f"the dashboard's browser test needs Chromium and its driver; missing: {', '.join(missing)}. "
            "Install them (Debian: `apt-get install -y chromium chromium-driver`), point "
            "HANZO_CHROMIUM / HANZO_CHROMEDRIVER at them, or set HANZO_SKIP_BROWSER=1 to skip.",
            pytrace=False,
        )


# -------------------------------------------------------------------------------------------------
# Servers with the movies, and the browser
# -------------------------------------------------------------------------------------------------


def fill(http: httpx.Client) -> None:
    """The movies with their settings, and a small second index listed before them."""
    tasks = [
        http.post("/indexes", json={"uid": INDEX, "primaryKey": "id"}),
        http.patch(f"/indexes/{INDEX}/settings", json=SETTINGS),
        http.post(f"/indexes/{INDEX}/documents", json=load_movies()),
        http.post(f"/indexes/{OTHER_INDEX}/documents", json=[{"id": 1, "title": "a note"}]),
    ]
    for r in tasks:
        assert r.status_code == 202, r.text
        assert wait_task(http, r.json()["taskUid"], timeout=120)["status"] == "succeeded"


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    require_browser()
    srv = ServerProcess(tmp_path_factory.mktemp("dashboard") / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            fill(http)
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def production_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    require_browser()
    srv = ServerProcess(
        tmp_path_factory.mktemp("dashboard-prod") / "data.ms",
        extra_args=["--env", "production", "--master-key", MASTER_KEY],
    ).start()
    try:
        with httpx.Client(
            base_url=srv.url, timeout=60, headers={"Authorization": f"Bearer {MASTER_KEY}"}
        ) as http:
            fill(http)
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Any]:
    require_browser()
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(
        executable_path=str(CHROMEDRIVER), log_output=str(tmp_path / "chromedriver.log")
    )
    browser = webdriver.Chrome(options=options, service=service)
    try:
        yield browser
    finally:
        browser.quit()


def wait_for(browser: Any, what: str, check: Callable[[Any], Any]) -> Any:
    """`check(browser)` once it is truthy; on timeout, fail naming `what` and showing the page's notice.

    The widgets redraw on every answer: an element gone stale meanwhile is looked up again.
    """
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
        TimeoutException,
    )
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(
        browser,
        WAIT,
        poll_frequency=0.1,
        ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
    )
    try:
        return wait.until(lambda b: check(b))
    except TimeoutException:
        notice = browser.execute_script("return document.getElementById('notice').textContent")
        pytest.fail(f"the dashboard did not show {what} within {WAIT:.0f} s (page notice: {notice!r})")


def act(browser: Any, what: str, action: Callable[[Any], Any]) -> None:
    """Do `action` (a click, a selection), again if what it touched was redrawn under it."""
    wait_for(browser, what, lambda b: action(b) or True)


# every hit of the page in one read, so that a redraw cannot fall between two lookups
HITS_JS = """
const box = document.getElementById('hits');
return {query: box.dataset.query === undefined ? null : box.dataset.query,
        hits: Array.from(box.querySelectorAll('li.hit')).map(e => ({
          id: e.dataset.id,
          title: e.querySelector('.hit-title').textContent,
          score: (e.querySelector('.score') || {}).textContent,
          marks: Array.from(e.querySelectorAll('mark')).map(m => m.textContent),
          html: e.innerHTML,
          text: e.textContent}))};
"""


def shown_hits(browser: Any) -> dict[str, Any]:
    shown: dict[str, Any] = browser.execute_script(HITS_JS)
    return shown


def hit_ids(browser: Any) -> list[str]:
    return [h["id"] for h in shown_hits(browser)["hits"]]


def hits_for(browser: Any, what: str, query: str, ids: list[str]) -> list[dict[str, Any]]:
    """The hits once the page shows exactly `ids` as the answer to `query`."""

    def check(b: Any) -> list[dict[str, Any]] | None:
        shown = shown_hits(b)
        hits: list[dict[str, Any]] = shown["hits"]
        return hits if shown["query"] == query and [h["id"] for h in hits] == ids else None

    result: list[dict[str, Any]] = wait_for(browser, what, check)
    return result


def screenshot(browser: Any, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    assert browser.save_screenshot(str(path)), "no screenshot"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"dashboard screenshot: {path}")
    return path


def console_errors(browser: Any, *, allowed: tuple[str, ...] = ()) -> list[str]:
    """The browser console's errors, but for the expected refusals named in `allowed`."""
    return [
        e["message"]
        for e in browser.get_log("browser")
        if e["level"] == "SEVERE" and not any(a in e["message"] for a in allowed)
    ]


def server_search(http: httpx.Client, **body: Any) -> dict[str, Any]:
    r = http.post(f"/indexes/{INDEX}/search", json=body)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    return result


def type_query(browser: Any, query: str) -> None:
    from selenium.webdriver.common.by import By

    box = wait_for(
        browser, "the search box", lambda b: b.find_element(By.CSS_SELECTOR, "input.ais-SearchBox-input")
    )
    box.clear()
    for char in query:  # key by key: every keystroke is a search
        box.send_keys(char)


# -------------------------------------------------------------------------------------------------
# The tests
# -------------------------------------------------------------------------------------------------


def test_search_highlights_facets_sort_and_panels(
    open_server: ServerProcess, driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    http = httpx.Client(base_url=open_server.url, timeout=30)
    driver.get(open_server.url + "/")

    # the index picker lists both indexes and opens the first; pick the movies
    options = wait_for(
        driver,
        "the index picker",
        lambda b: (
            [o.get_attribute("value") for o in b.find_elements(By.CSS_SELECTOR, "#index-select option")]
            or None
        ),
    )
    assert options == [OTHER_INDEX, INDEX]
    wait_for(driver, "the first index's hits", lambda b: hit_ids(b) == ["1"])
    act(
        driver,
        "the movies index",
        lambda b: Select(b.find_element(By.ID, "index-select")).select_by_value(INDEX),
    )
    wait_for(
        driver,
        "the genre refinement list",
        lambda b: b.find_elements(
            By.CSS_SELECTOR, '.facet[data-attribute="genres"] .ais-RefinementList-item'
        ),
    )

    # search as you type: the server's own hits in its order, highlighted, with their ranking scores
    type_query(driver, QUERY)
    expected = server_search(http, q=QUERY, showRankingScore=True)
    assert expected["hits"], "the query must match movies"
    first = expected["hits"][0]
    hits = hits_for(driver, f"{first['title']!r} first", QUERY, [str(h["id"]) for h in expected["hits"][:10]])
    assert hits[0]["title"] == first["title"]
    assert hits[0]["marks"], hits[0]["html"]
    assert "<mark>" in hits[0]["html"]
    assert all(
        any(w.startswith(m.lower()) or m.lower().startswith(w) for w in QUERY.split())
        for m in hits[0]["marks"]
    ), hits[0]["marks"]
    assert [h["score"] for h in hits] == [f"score {h['_rankingScore']:.4f}" for h in expected["hits"][:10]]
    wait_for(
        driver,
        "the number of hits",
        lambda b: f"{expected['estimatedTotalHits']} result" in b.find_element(By.ID, "search-stats").text,
    )

    # the narrowest genre of these hits with two of them or more: clicking it narrows the hits to the
    # server's answer to the same filter
    facets = server_search(http, q=QUERY, facets=["genres"], limit=0)
    total = facets["estimatedTotalHits"]
    genre, count = min(
        facets["facetDistribution"]["genres"].items(), key=lambda gn: (gn[1] < 2, gn[1], gn[0])
    )
    assert count < total

    def genre_item(b: Any) -> Any:
        return next(
            i
            for i in b.find_elements(
                By.CSS_SELECTOR, '.facet[data-attribute="genres"] .ais-RefinementList-item'
            )
            if i.find_element(By.CSS_SELECTOR, ".ais-RefinementList-labelText").text == genre
        )

    assert wait_for(
        driver,
        f"the {genre!r} count",
        lambda b: genre_item(b).find_element(By.CSS_SELECTOR, ".ais-RefinementList-count").text,
    ) == str(count)
    act(
        driver,
        f"a click on {genre!r}",
        lambda b: genre_item(b).find_element(By.CSS_SELECTOR, "input[type=checkbox]").click(),
    )
    filtered = server_search(http, q=QUERY, filter=f'genres = "{genre}"')
    assert filtered["estimatedTotalHits"] == count
    hits = hits_for(driver, f"the hits of {genre!r}", QUERY, [str(h["id"]) for h in filtered["hits"][:10]])
    assert all(genre in h["text"] for h in hits)
    screenshot(driver, tmp_path, "dashboard.png")

    # without the genre, sorted by vote_average; then the placeholder search with 20 hits per page
    act(
        driver,
        "a click on 'Clear all filters'",
        lambda b: b.find_element(By.CSS_SELECTOR, ".ais-ClearRefinements-button").click(),
    )
    act(
        driver,
        "the sort by vote_average",
        lambda b: Select(b.find_element(By.CSS_SELECTOR, "#sort-by select")).select_by_value(
            f"{INDEX}:vote_average:desc"
        ),
    )
    by_votes = server_search(http, q=QUERY, sort=["vote_average:desc"])
    hits_for(driver, "the hits sorted by vote_average", QUERY, [str(h["id"]) for h in by_votes["hits"][:10]])
    act(
        driver,
        "a click on the search box's reset",
        lambda b: b.find_element(By.CSS_SELECTOR, ".ais-SearchBox-reset").click(),
    )
    act(
        driver,
        "20 hits per page",
        lambda b: Select(b.find_element(By.CSS_SELECTOR, "#hits-per-page select")).select_by_value("20"),
    )
    wide = server_search(http, q="", sort=["vote_average:desc"], limit=20)
    assert len(wide["hits"]) == 20
    hits_for(driver, "20 hits sorted by vote_average", "", [str(h["id"]) for h in wide["hits"]])

    # the panels (redrawn every few seconds): the index's stats, its settings read-only, and the recent
    # tasks with their status
    stats = http.get(f"/indexes/{INDEX}/stats").json()
    documents = wait_for(
        driver,
        "the index stats",
        lambda b: b.execute_script(
            "const t = document.getElementById('stats-table'); return t && t.rows[0].cells[1].textContent"
        ),
    )
    assert documents == str(stats["numberOfDocuments"])
    shown_settings = json.loads(driver.find_element(By.ID, "index-settings").get_attribute("textContent"))
    assert shown_settings == http.get(f"/indexes/{INDEX}/settings").json()
    tasks = http.get("/tasks", params={"limit": 10}).json()["results"]
    rows = wait_for(
        driver,
        "the recent tasks",
        lambda b: b.execute_script(
            "return Array.from(document.querySelectorAll('#tasks-table tr[data-task]'))"
            ".map(r => [r.dataset.task, r.querySelector('.status').textContent])"
        ),
    )
    assert rows == [[str(t["uid"]), t["status"]] for t in tasks]
    screenshot(driver, tmp_path, "dashboard-sorted.png")
    assert console_errors(driver) == []
    http.close()


def test_production_asks_for_the_master_key(
    production_server: ServerProcess, driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    # the page loads, but shows nothing before it has a key
    driver.get(production_server.url + "/")
    prompt = wait_for(
        driver, "the key prompt", lambda b: (e := b.find_element(By.ID, "key-prompt")).is_displayed() and e
    )
    assert not driver.find_element(By.ID, "app").is_displayed()
    assert hit_ids(driver) == []
    assert "master key" in prompt.text
    screenshot(driver, tmp_path, "dashboard-key-prompt.png")

    # a wrong key is refused, and the prompt stays
    driver.find_element(By.ID, "key-prompt-input").send_keys("not-the-key")
    driver.find_element(By.CSS_SELECTOR, "#key-prompt-form button").click()
    wait_for(driver, "the refusal", lambda b: "refused" in b.find_element(By.ID, "key-prompt-reason").text)
    assert not driver.find_element(By.ID, "app").is_displayed()

    # the master key opens the dashboard; the search goes through instant-meilisearch with the key
    driver.find_element(By.ID, "key-prompt-input").send_keys(MASTER_KEY)
    driver.find_element(By.CSS_SELECTOR, "#key-prompt-form button").click()
    wait_for(driver, "the dashboard", lambda b: b.find_element(By.ID, "app").is_displayed())
    from selenium.webdriver.support.ui import Select

    act(
        driver,
        "the movies index",
        lambda b: Select(b.find_element(By.ID, "index-select")).select_by_value(INDEX),
    )
    wait_for(
        driver,
        "the genre refinement list",
        lambda b: b.find_elements(
            By.CSS_SELECTOR, '.facet[data-attribute="genres"] .ais-RefinementList-item'
        ),
    )
    type_query(driver, QUERY)
    with httpx.Client(
        base_url=production_server.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}
    ) as http:
        expected = server_search(http, q=QUERY)["hits"][:10]
    hits = hits_for(driver, f"{expected[0]['title']!r} first", QUERY, [str(h["id"]) for h in expected])
    assert hits[0]["marks"]
    assert driver.execute_script("return localStorage.getItem('hanzo-engine.dashboard.apiKey')") == MASTER_KEY

    # the key is remembered: a reload opens the dashboard on the same index without asking again
    driver.refresh()
    wait_for(driver, "the dashboard after a reload", lambda b: b.find_element(By.ID, "app").is_displayed())
    assert not driver.find_element(By.ID, "key-prompt").is_displayed()
    assert driver.find_element(By.ID, "index-select").get_attribute("value") == INDEX
    screenshot(driver, tmp_path, "dashboard-production.png")
    assert console_errors(driver, allowed=("status of 401", "status of 403")) == []
