"""The QUEST page of `sleuth serve` (/quest) in headless Chromium: a real server over the proxy corpus of the val
split with a small anchored set-operation pipeline (the shipped classifier); the page must show the parsed template,
the constraints and the predicted set with the scores the API gives."""

from __future__ import annotations

import json

import httpx
import pytest

from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents
from tests.chromium import headless_chromium  # skips this module without Chromium or selenium
from tests.server_process import sleuth_server

WAIT_SECONDS = 120

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

QUERY = "Films about World War III that are not Environmental films"


@pytest.fixture(scope="module")
def server(data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("quest-page")
    corpus = folder / "documents.jsonl"
    write_quest_documents(corpus, quest_attribution_documents(data_dir / "quest" / "val.jsonl"))
    pipeline = folder / "quest-small-setops.yaml"
    pipeline.write_text(json.dumps({"name": "quest-small-setops", "stages": [
        {"bm25": {"k": 5}},
        {"setops": {"threshold": 0.0, "system": "bm25+setops", "int8": True, "anchor": True,
                    "not_weight": "tuned", "retriever_weight": 0.0, "constraint_weight": 1.0}}]}),  # the plain AND
                   encoding="utf-8")
    args = ["--corpus", str(corpus), "--pipeline", "bm25", "--pipeline", str(pipeline)]
    with sleuth_server(args, env={"SLEUTH_HOME": str(folder / "home")}) as url:
        with headless_chromium(folder / "chrome-profile") as driver:
            yield url, driver


def test_the_quest_page_shows_the_parsed_query_and_the_scored_set(server):
    url, driver = server
    expected = httpx.post(url + "/quest/predict", json={"query": QUERY}, timeout=WAIT_SECONDS).json()
    assert expected["symbol"] == "A\\B" and expected["members"]
    driver.get(url + "/quest")
    WebDriverWait(driver, WAIT_SECONDS).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#pipeline option"))
    assert [o.text for o in driver.find_elements(By.CSS_SELECTOR, "#pipeline option")] == ["quest-small-setops"]
    driver.find_element(By.ID, "query").send_keys(QUERY)
    driver.find_element(By.ID, "submit").click()
    WebDriverWait(driver, WAIT_SECONDS).until(lambda d: d.find_element(By.ID, "members").is_displayed())
    assert driver.find_element(By.ID, "template").text.startswith("A\\B")
    constraints = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#constraints li")]
    assert len(constraints) == 2 and constraints[1].startswith("not: ") and not constraints[0].startswith("not")
    head = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#members-head th")]
    assert head == ["#", "member", "score", "whole query", "A", "B (not)"]
    rows = driver.find_elements(By.CSS_SELECTOR, "#members-body tr")
    assert len(rows) == len(expected["members"])
    for row, member in zip(rows, expected["members"]):
        cells = row.find_elements(By.TAG_NAME, "td")
        assert cells[1].find_element(By.CLASS_NAME, "title").text == (member["title"] or member["id"])
        shown = [float(cell.text) for cell in cells[2:]]
        wanted = [member["score"], member["whole_score"], *member["constraint_scores"]]
        assert shown == pytest.approx(wanted, abs=5e-4)
        assert member["score"] <= min(member["whole_score"], member["constraint_scores"][0]) + 1e-6  # anchored AND
    assert driver.find_element(By.ID, "error").get_attribute("hidden") is not None
