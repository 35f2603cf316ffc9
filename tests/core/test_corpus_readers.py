"""Corpus readers on the real shared data (counts from its README), and their errors on small malformed files."""

from __future__ import annotations

import bz2
import json
from pathlib import Path

import pytest

from sleuth.corpus.beir import load_beir, read_beir_corpus, read_beir_queries, read_qrels
from sleuth.corpus.formats import FORMATS, detect_format, read_documents
from sleuth.corpus.hotpotqa import hotpotqa_context_documents, read_hotpotqa_corpus, read_hotpotqa_questions
from sleuth.corpus.jsonl import read_jsonl_documents
from sleuth.corpus.mediawiki import DumpStats, link_kind, read_mediawiki, wikitext_document
from sleuth.corpus.model import Query
from sleuth.corpus.musique import musique_context_documents, read_musique_corpus, read_musique_questions
from sleuth.corpus.ottqa import read_ottqa_passages, read_ottqa_questions, read_ottqa_tables
from sleuth.corpus.quest import (
    quest_attribution_documents,
    read_quest_documents,
    read_quest_examples,
    write_quest_predictions,
)
from sleuth.corpus.questions import read_questions
from sleuth.corpus.squad import read_squad_documents, read_squad_questions, squad_qrels
from sleuth.corpus.trec import read_trec_documents, read_trec_topics
from sleuth.errors import ConfigError, InputError

WIKI_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- BEIR and qrels -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scifact(data_dir):
    return load_beir(data_dir / "scifact", split="train")


def test_scifact_corpus_queries_and_qrels(scifact, data_dir):
    docs = list(scifact.documents())
    assert len(docs) == 5183 and len({d.id for d in docs}) == 5183
    assert docs[0].id == "4983" and docs[0].title.startswith("Microstructural development")
    assert len(list(read_beir_queries(data_dir / "scifact" / "queries.jsonl"))) == 809
    assert len(scifact.queries) == len(scifact.qrels) == 809
    assert sum(len(judged) for judged in scifact.qrels.values()) == 919
    assert scifact.qrels["0"] == {"31715818": 1}
    assert {q.id for q in scifact.queries} == set(scifact.qrels)


def test_beir_corpus_accepts_the_folder(data_dir):
    first = next(read_beir_corpus(data_dir / "scifact"))
    assert first.id == "4983"


def test_trec_qrels_are_detected_and_graded(data_dir):
    dl19 = read_qrels(data_dir / "trec-dl19" / "qrels.dl19-passage.txt")
    assert len(dl19) == 43 and sum(len(j) for j in dl19.values()) == 9260
    assert {rel for judged in dl19.values() for rel in judged.values()} == {0, 1, 2, 3}
    vaswani = read_qrels(data_dir / "vaswani" / "qrels")
    assert len(vaswani) == 93 and sum(len(j) for j in vaswani.values()) == 2083
    assert vaswani["1"]["1239"] == 1


def test_load_beir_restricts_queries_to_the_split(tmp_path):
    (tmp_path / "qrels").mkdir()
    write(tmp_path / "corpus.jsonl", '{"_id": "d1", "title": "T", "text": "x"}\n')
    write(tmp_path / "queries.jsonl", '{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "b"}\n')
    write(tmp_path / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq2\td1\t1\n")
    dataset = load_beir(tmp_path, split="test")
    assert [q.id for q in dataset.queries] == ["q2"] and dataset.qrels == {"q2": {"d1": 1}}
    with pytest.raises(InputError, match="train.tsv"):
        load_beir(tmp_path, split="train")


# --- TREC -----------------------------------------------------------------------------------------------------


def test_trec_topics_tsv_and_sgml(data_dir):
    dl19 = list(read_trec_topics(data_dir / "trec-dl19" / "topics.dl19-passage.txt"))
    assert len(dl19) == 43 and dl19[0].id == "156493" and dl19[0].text == "do goldfish grow"
    vaswani = list(read_trec_topics(data_dir / "vaswani" / "query-text.trec"))
    assert len(vaswani) == 93 and [q.id for q in vaswani[:2]] == ["1", "2"]
    assert vaswani[0].text == "MEASUREMENT OF DIELECTRIC CONSTANT OF LIQUIDS BY THE USE OF MICROWAVE TECHNIQUES"


def test_classic_trec_topics_without_closing_tags(tmp_path):
    path = write(tmp_path / "topics.401", (
        "<top>\n\n<num> Number: 401\n<title> foreign minorities, Germany\n\n"
        "<desc> Description:\nWhat language and cultural differences impede\nthe integration?\n\n"
        "<narr> Narrative:\nA relevant document will focus on the causes.\n</top>\n"))
    [title] = read_trec_topics(path)
    assert (title.id, title.text) == ("401", "foreign minorities, Germany")
    assert title.metadata["desc"] == "What language and cultural differences impede the integration?"
    [desc] = read_trec_topics(path, field="desc")
    assert desc.text.startswith("What language") and desc.metadata["title"] == "foreign minorities, Germany"


def test_vaswani_documents(data_dir):
    docs = list(read_trec_documents(data_dir / "vaswani" / "doc-text.trec"))
    assert len(docs) == 11429 and len({d.id for d in docs}) == 11429
    assert docs[0].id == "1" and docs[0].text.startswith("compact memories have flexible capacities")
    assert "<" not in docs[0].text and "1" not in docs[0].text.split()


def test_trec_documents_with_text_and_headline_tags(tmp_path):
    path = write(tmp_path / "news.trec", (
        "<DOC>\n<DOCNO> LA010189-0001 </DOCNO>\n<DATE>Jan 1</DATE>\n<HEADLINE><P>Big news</P></HEADLINE>\n"
        "<TEXT>\n<P>First paragraph.</P>\n<P>Second one.</P>\n</TEXT>\n</DOC>\n"))
    [doc] = read_trec_documents(path)
    assert (doc.id, doc.title, doc.text) == ("LA010189-0001", "Big news", "First paragraph. Second one.")


# --- HotpotQA, MuSiQue ----------------------------------------------------------------------------------------


def test_hotpotqa_questions_and_corpus(data_dir):
    train = list(read_hotpotqa_questions(data_dir / "hotpotqa" / "hotpot_train_100.json"))
    assert len(train) == 100
    first = train[0]
    assert first.id == "5a77ec115542992a6e59dff7" and first.metadata["answer"] == "a spirit"
    assert first.metadata["supporting_titles"] == ["Alû", "Lilu (mythology)"]
    assert len(first.metadata["context_titles"]) == 10 and first.metadata["level"] == "easy"
    corpus = {d.id: d for d in read_hotpotqa_corpus(data_dir / "hotpotqa" / "hotpot_train_100_corpus.json")}
    assert len(corpus) == 994
    assert all(t in corpus for q in train for t in q.metadata["supporting_titles"])
    demon = corpus["Demon Dice"]
    assert demon.text == "".join(demon.metadata["sentences"]) and ". In it, each player" in demon.text


def test_hotpotqa_dev_context_paragraphs(data_dir):
    path = data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"
    assert len(list(read_hotpotqa_questions(path))) == 100
    docs = list(hotpotqa_context_documents(path))
    assert len(docs) == len({d.id for d in docs}) == 1000


def test_musique_questions_and_corpus(data_dir):
    questions = list(read_musique_questions(data_dir / "musique" / "musique_train_100.json"))
    assert len(questions) == 100
    assert all(2 <= len(q.metadata["question_decomposition"]) <= 4 for q in questions)
    first = questions[0]
    assert first.metadata["answer"] == "G. Stanley Hall" and first.metadata["answer_aliases"] == ["Stanley Hall"]
    assert len(first.metadata["paragraphs"]) == 20 and len(first.metadata["supporting_ids"]) == 2
    corpus = list(read_musique_corpus(data_dir / "musique" / "musique_train_100_corpus.json"))
    ids = {d.id for d in corpus}
    assert len(corpus) == len(ids) == 1890  # titles repeat (1,764 distinct), ids do not
    assert all(i in ids for q in questions for i in q.metadata["supporting_ids"])
    assert {d.id for d in musique_context_documents(data_dir / "musique" / "musique_train_100.json")} == ids


def test_musique_in_its_release_format_json_lines(data_dir, tmp_path):
    """MuSiQue's own files are JSON Lines (the dev sample too): before, "musique_dev_200.jsonl:2: malformed JSON
    (Extra data)"; a bad line is named by file:line, and a one-question file reads."""
    dev = data_dir / "musique" / "musique_dev_200.jsonl"
    questions = list(read_musique_questions(dev))
    assert len(questions) == len({q.id for q in questions}) == 200
    assert all(len(q.metadata["paragraphs"]) == 20 and 2 <= len(q.metadata["supporting_ids"]) <= 4 for q in questions)
    lines = dev.read_text(encoding="utf-8").splitlines()
    one = write(tmp_path / "one.jsonl", lines[0] + "\n")
    assert [q.id for q in read_musique_questions(one)] == [questions[0].id]
    broken = json.loads(lines[1])
    del broken["paragraphs"][3]["paragraph_text"]
    bad = write(tmp_path / "bad.jsonl", "\n".join([lines[0], json.dumps(broken)]) + "\n")
    with pytest.raises(InputError, match=r"bad\.jsonl:2\.paragraphs\[3\]: field 'paragraph_text'"):
        list(read_musique_questions(bad))
    with pytest.raises(InputError, match=r"musique_dev_200\.jsonl:1: a MuSiQue record, not a HotpotQA-format question"):
        list(read_hotpotqa_questions(dev))
    with pytest.raises(InputError, match=r"dev-v2\.0\.json:1: a SQuAD record"):
        list(read_hotpotqa_questions(data_dir / "squad2" / "dev-v2.0.json"))


# --- QUEST ----------------------------------------------------------------------------------------------------


def test_quest_examples(data_dir):
    val = list(read_quest_examples(data_dir / "quest" / "val.jsonl"))
    assert len(val) == 323 and val[0].id == "val-0001" and len({q.id for q in val}) == 323
    first = val[0]
    assert first.text == "Philippine remakes of South Korean films or 2010s prison dramas"
    assert first.metadata["template"] == "_ or _" and first.metadata["domain"] == "films"
    assert "O.G. (film)" in first.metadata["docs"] and first.metadata["original_query"].startswith("<mark>")
    assert sum(1 for _ in read_quest_examples(data_dir / "quest" / "train.jsonl")) == 1307


def test_quest_attribution_corpus(data_dir):
    val_path, train_path = data_dir / "quest" / "val.jsonl", data_dir / "quest" / "train.jsonl"
    val = list(quest_attribution_documents(val_path))
    assert len(val) == 1490  # README: about 1,490 titles with attributions in val
    film = next(d for d in val if d.id == "A Hidden Life (2019 film)")
    assert "After months of brutal incarceration" in film.text and len(film.metadata["sentences"]) >= 2
    both = list(quest_attribution_documents([val_path, train_path]))
    assert len(both) == len({d.id for d in both}) and 5139 <= len(both) < 1490 + 5139


def test_quest_predictions_round_trip(data_dir, tmp_path):
    gold = list(read_quest_examples(data_dir / "quest" / "val.jsonl"))[:5]
    out = tmp_path / "pred.jsonl"
    assert write_quest_predictions(out, gold) == 5
    again = list(read_quest_examples(out))
    assert [q.id for q in again] == [q.id for q in gold]
    assert [q.metadata for q in again] == [q.metadata for q in gold]
    write_quest_predictions(out, gold, with_ids=False)  # QUEST's own scripts accept only their fields
    keys = {key for line in out.read_text().splitlines() for key in json.loads(line)}
    assert keys == {"query", "docs", "original_query", "scores", "metadata"}
    with pytest.raises(InputError, match="docs"):
        write_quest_predictions(out, [Query("x", "query")])


def test_quest_documents_use_the_title_as_id(tmp_path):
    path = write(tmp_path / "documents.jsonl", '{"title": "Anarchism", "text": "A political philosophy."}\n')
    [doc] = read_quest_documents(path)
    assert (doc.id, doc.title, doc.text) == ("Anarchism", "Anarchism", "A political philosophy.")


# --- MediaWiki ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wiki(data_dir):
    stats = DumpStats()
    docs = list(read_mediawiki(data_dir / "wikipedia" / WIKI_DUMP, stats=stats))
    return docs, stats


def test_wikipedia_dump_counts(wiki):
    docs, stats = wiki
    # The README says 105 articles; the file holds 106 non-redirect pages in namespace 0 (205 ns-0 pages, 99 of them
    # redirects, plus one redirect in namespace 4: 100 redirects in all).
    assert stats == DumpStats(articles=106, redirects=100, other_namespaces=0)
    assert len(docs) == 106 and docs[0].title == "Anarchism"
    # README: 2,257 headings; 2,261 heading lines exist once HTML comments after headings are allowed for.
    assert sum(len(d.headings()) for d in docs) == 2261


def test_wikipedia_article_structure(wiki):
    docs, _ = wiki
    anarchism = docs[0]
    assert anarchism.text.startswith("Anarchism is a political philosophy")
    assert anarchism.metadata["categories"][:3] == ["Anarchism", "Political culture", "Political ideologies"]
    assert ("History", "Origins") in [path for path, _ in anarchism.walk_sections()]
    assert all(not c.startswith("Category:") for d in docs for c in d.metadata["categories"])
    assert "Political philosophy" in anarchism.metadata["links"]
    assert not any(link.startswith(("File:", "Image:", "Category:")) for d in docs for link in d.metadata["links"])
    assert anarchism.metadata["page_id"] == "12" and anarchism.metadata["namespace"] == 0
    for doc in docs:
        for path, section in doc.walk_sections():
            assert section.level == len(path)
        text = doc.full_text()
        assert "{{" not in text and "[[" not in text and "<ref" not in text and "thumb|" not in text


def test_wikipedia_tables_are_optional(data_dir):
    path = data_dir / "wikipedia" / "enwiki-table-markup.xml.bz2"
    plain = {d.title: d for d in read_mediawiki(path)}
    tables = {d.title: d for d in read_mediawiki(path, keep_tables=True)}
    award = "Academy Award for Best Production Design"
    assert len(plain) == 5 and len(tables[award].full_text()) > 10 * len(plain[award].full_text())


def test_wikitext_headings_nest_and_markup_is_stripped():
    doc = wikitext_document("T", (
        "'''T''' is [[Foo|a foo]] {{Infobox|x=1}}<ref>cite</ref> [[File:a.jpg|thumb|caption [[Bar]]]].\n"
        "== A ==\ntext a\n==== A deep ====\ndeep\n=== A mid ===\nmid\n== B [[Baz]] ==\nb\n"
        "[[Category:Things|sort]]\n[[de:T]]\n[[wikt:foo|foo word]]"))
    assert doc.text == "T is a foo ."
    assert [(p, s.level) for p, s in doc.walk_sections()] == [
        (("A",), 1), (("A", "A deep"), 2), (("A", "A mid"), 2), (("B Baz",), 1)]
    assert doc.sections[1].text == "b\n\nfoo word"
    assert doc.metadata == {"categories": ["Things"], "links": ["Foo", "Bar", "Baz"]}
    assert link_kind("de:Anarchismus") == ("hidden", "") and link_kind(":Category:X") == ("shown", "")
    assert link_kind("star Trek: Voyager#Cast") == ("article", "Star Trek: Voyager")


def test_mediawiki_redirects_and_namespaces(tmp_path):
    page = "<page><title>{}</title><ns>{}</ns><id>{}</id>{}<revision><text>{}</text></revision></page>"
    xml = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/">'
           + page.format("A", 0, 1, "", "Body of A.")
           + page.format("R", 0, 2, '<redirect title="A" />', "#REDIRECT [[A]]")
           + page.format("Talk:A", 1, 3, "", "chat") + "</mediawiki>")
    path = tmp_path / "dump.xml.bz2"
    path.write_bytes(bz2.compress(xml.encode()))
    stats = DumpStats()
    assert [d.text for d in read_mediawiki(path, stats=stats)] == ["Body of A."]
    assert stats == DumpStats(articles=1, redirects=1, other_namespaces=1)
    docs = list(read_mediawiki(path, include_redirects=True, namespaces=(0, 1)))
    assert [d.id for d in docs] == ["A", "R", "Talk:A"] and docs[1].metadata["redirect"] == "A"


# --- OTT-QA ---------------------------------------------------------------------------------------------------


def test_ottqa_tables_passages_and_questions(data_dir):
    tables = list(read_ottqa_tables(data_dir / "ottqa"))
    assert len(tables) == 687
    notre_dame = tables[0]
    assert notre_dame.id == "1911_Notre_Dame_Fighting_Irish_football_team_0"
    assert notre_dame.text.startswith("The 1911 Notre Dame Fighting Irish football team represented")
    assert notre_dame.headings() == ["Schedule"]
    assert notre_dame.sections[0].text.startswith("Date: October 7; Opponent: Ohio Northern; Site: Cartier Field")
    assert notre_dame.metadata["header"] == ["Date", "Opponent", "Site", "Result"]
    passages = list(read_ottqa_passages(data_dir / "ottqa"))
    assert len(passages) == len({p.id for p in passages}) == 15807
    assert any(p.id == "/wiki/Cartier_Field" and p.title == "Cartier Field" for p in passages)
    questions = list(read_ottqa_questions(data_dir / "ottqa" / "dev.traced.json"))
    assert len(questions) == 2214 and questions[0].metadata["answer"] == "Lynda La Plante"
    assert questions[0].metadata["answer_nodes"][0][0] == "Prime Suspect"
    table_ids = {t.id for t in tables}
    assert sum(q.metadata["table_id"] in table_ids for q in questions) == 2022


# --- the format registry --------------------------------------------------------------------------------------


def test_format_detection(data_dir):
    assert detect_format(data_dir / "scifact") == "beir"
    assert detect_format(data_dir / "vaswani" / "doc-text.trec") == "trec"
    assert detect_format(data_dir / "wikipedia" / WIKI_DUMP) == "mediawiki"  # by content: no .xml in its name
    assert detect_format(data_dir / "wikipedia" / "enwiki-table-markup.xml.bz2") == "mediawiki"
    assert detect_format(data_dir / "nq" / "corpus.jsonl") == "jsonl"
    assert detect_format(data_dir / "ottqa") == "ottqa"
    assert sum(1 for _ in read_documents(data_dir / "scifact")) == 5183
    assert next(read_documents(data_dir / "hotpotqa" / "hotpot_train_100_corpus.json", "hotpotqa")).id == "Demon Dice"


def test_format_errors(tmp_path):
    with pytest.raises(ConfigError, match="'wat'.*" + ", ".join(FORMATS)):
        read_documents(tmp_path, format="wat")
    unknown = write(tmp_path / "notes.txt", "just words\n")
    with pytest.raises(InputError, match="notes.txt.*" + ", ".join(FORMATS)):
        read_documents(unknown)
    docs = write(tmp_path / "docs.jsonl", '{"key": "a", "body": "b"}\n')
    assert next(read_documents(docs, fields={"id": "key", "text": "body"})).id == "a"
    with pytest.raises(ConfigError, match="jsonl"):
        read_documents(docs, format="trec", fields={"id": "key"})


# --- malformed input: every error names the file and the line (or record) and field --------------------------


HOTPOT_RECORDS = json.dumps([{"_id": "a", "question": "q"}, {"_id": "b"}])
MUSIQUE_RECORDS = json.dumps([{"id": "x", "question": "q", "paragraphs": [{"title": "t"}]}])


@pytest.mark.parametrize("name, text, read, message", [
    ("corpus.jsonl", '{"_id": "1", "text": "a"}\n{"_id": "2", "text": "b"}\n{"_id": "3", \n', read_beir_corpus,
     r"corpus\.jsonl:3: malformed JSON"),
    ("queries.jsonl", '{"_id": "1", "text": "a"}\n{"_id": "2"}\n', read_beir_queries,
     r"queries\.jsonl:2: field 'text': missing"),
    ("val.jsonl", '{"query": "q"}\n', read_quest_examples, r"val\.jsonl:1: field 'docs': missing"),
    ("blank.jsonl", '{"query": "q", "docs": []}\n{"query": "  ", "docs": []}\n', read_quest_examples,
     r"blank\.jsonl:2: field 'query': empty query text"),
    ("empty.jsonl", '{"_id": "1", "text": "a"}\n{"_id": "2", "text": ""}\n', read_beir_queries,
     r"empty\.jsonl:2: field 'text': empty query text"),
    ("nq.jsonl", '{"id": "1", "question": "\\t", "answers": []}\n', read_questions,
     r"nq\.jsonl:1: field 'question': empty query text"),
    ("nq2.jsonl", '{"id": "1", "question": "a", "answers": ["x"]}\n{"id": "1", "question": "b", "answers": ["y"]}\n',
     read_questions, r"nq2\.jsonl:2: query id '1' appears twice \(first on line 1\)"),
    # session 28: a question without an answer, or with an empty one, was scored as a miss by every pipeline
    ("nq3.jsonl", '{"id": "1", "question": "a", "answers": ["x"]}\n{"id": "2", "question": "b", "answers": []}\n',
     read_questions, r"nq3\.jsonl:2: field 'answers': needs at least one answer, none of them empty"),
    ("nq4.jsonl", '{"id": "1", "question": "a", "answers": ["x", " "]}\n', read_questions,
     r"nq4\.jsonl:1: field 'answers': needs at least one answer"),
    ("docs.trec", "<DOC>\n<DOCNO>1</DOCNO>\nfine\n</DOC>\n<DOC>\nno number here\n</DOC>\n", read_trec_documents,
     r"docs\.trec:5: field 'DOCNO'"),
    ("open.trec", "<DOC>\n<DOCNO>1</DOCNO>\n<DOC>\n", read_trec_documents, r"open\.trec:3: <DOC> opened before"),
    ("plain.trec", "hello\n", read_trec_documents, "no <DOC>"),
    ("qrels.txt", "1 0 d1 1\n1 0 d2\n", read_qrels, r"qrels\.txt:2: expected 4 columns"),
    ("conflict.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\nq1\td1\t0\n", read_qrels,
     r"conflict\.tsv:4: query 'q1', document 'd1' judged 0 here and 1 on line 2"),
    ("header.tsv", "q1\t0\td1\n", read_qrels, r"header\.tsv: no judgements .*BEIR's header"),
    ("test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\thigh\n", read_qrels, r"test\.tsv:2: relevance must be an integer"),
    ("topics.tsv", "1\tfirst\n2 second\n", read_trec_topics, r"topics\.tsv:2: expected 'qid<TAB>query'"),
    ("topics.trec", "<top>\n<num>1</num>\n</top>\n", read_trec_topics, r"topics\.trec:1: field 'title'"),
    ("hotpot.json", '[\n{"_id": "a",\n "question": }\n]', read_hotpotqa_questions, r"hotpot\.json:3: malformed JSON"),
    ("hotpot2.json", HOTPOT_RECORDS, read_hotpotqa_questions, r"hotpot2\.json\[1\]: field 'question': missing"),
    ("musique.json", MUSIQUE_RECORDS, read_musique_questions,
     r"musique\.json\[0\]\.paragraphs\[0\]: field 'paragraph_text'"),
    ("dump.xml", "<mediawiki>\n<page><title>A</title>\n<ns>0</ns></pag>\n</mediawiki>\n", read_mediawiki,
     r"dump\.xml:3: malformed XML"),
])
def test_malformed_input_is_located(tmp_path, name, text, read, message):
    path = write(tmp_path / name, text)
    with pytest.raises(InputError, match=message):
        list(read(path))


def test_a_byte_order_mark_and_crlf_line_ends_read_as_plain_utf8(tmp_path):
    """Before: a corpus saved by a Windows editor (UTF-8 with BOM, CRLF) failed at line 1 with "Unexpected UTF-8 BOM",
    and a JSON file (HotpotQA, SQuAD) with a BOM could not be read."""
    records = '{"_id": "a", "title": "t", "text": "hello world"}\n{"_id": "b", "text": "cats"}\n'
    plain = write(tmp_path / "plain.jsonl", records)
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + records.replace("\n", "\r\n").encode("utf-8"))
    assert list(read_documents(marked)) == list(read_documents(plain)) and detect_format(marked) == detect_format(plain)
    squad = tmp_path / "squad.json"
    squad.write_bytes(b"\xef\xbb\xbf" + json.dumps({"version": "v2.0", "data": [{"title": "T", "paragraphs": [
        {"context": "Some text.", "qas": []}]}]}).encode("utf-8"))
    assert [doc.text for doc in read_squad_documents(squad)] == ["Some text."]


@pytest.mark.parametrize("name, text, where", [
    ("queries.jsonl", '{"_id": "q1", "text": "hello"}\n{"_id": "q2", "text": "x"}\n{"_id": "q1", "text": "cats"}\n',
     r":3: query id 'q1' appears twice \(first on line 1\)"),
    ("topics.tsv", "q1\thello\nq2\tx\nq1\tcats\n", r": query id 'q1' appears twice \(queries 1 and 3\)"),
])
def test_a_repeated_query_id_is_refused(tmp_path, name, text, where):
    """Before: `sleuth eval` and `sleuth.read_queries` (a BEIR folder too) read both and scored one of them silently
    (a run keeps one ranking per query id)."""
    from sleuth.corpus.formats import read_queries

    path = write(tmp_path / name, text)
    with pytest.raises(InputError, match=rf"{name}{where}"):
        read_queries(path)
    if name == "queries.jsonl":
        (tmp_path / "qrels").mkdir()
        write(tmp_path / "qrels" / "train.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
        write(tmp_path / "corpus.jsonl", '{"_id": "d1", "text": "hello"}\n')
        with pytest.raises(InputError, match=rf"{name}{where}"):
            load_beir(tmp_path)


def test_a_judgement_repeated_with_the_same_relevance_is_read_once(tmp_path):
    path = write(tmp_path / "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td1\t2\n")
    assert read_qrels(path) == {"q1": {"d1": 2}}


def test_malformed_table_names_its_file_and_field(tmp_path):
    (tmp_path / "tables").mkdir()
    write(tmp_path / "tables" / "t_0.json", json.dumps({"uid": "t_0", "header": [["h", []]], "data": [["bad"]]}))
    with pytest.raises(InputError, match=r"t_0\.json: field 'data'"):
        list(read_ottqa_tables(tmp_path))


def test_generic_jsonl_field_mapping(tmp_path):
    path = write(tmp_path / "c.jsonl", '{"pid": 7, "body": "text", "source": "x"}\n')
    [doc] = read_jsonl_documents(path, fields={"id": "pid", "text": "body"})
    assert (doc.id, doc.text, doc.metadata) == ("7", "text", {"source": "x"})


def test_quest_documents_are_detected_by_their_records(tmp_path):
    from sleuth.corpus.formats import detect_format, read_documents

    quest = tmp_path / "documents.jsonl"
    quest.write_text('{"title": "Alien (film)", "text": "A 1979 film."}\n')
    beir = tmp_path / "corpus.jsonl"
    beir.write_text('{"_id": "1", "title": "Alien (film)", "text": "A 1979 film."}\n')
    assert detect_format(quest) == "quest" and detect_format(beir) == "jsonl"
    assert [d.id for d in read_documents(quest)] == ["Alien (film)"]
    assert [d.id for d in read_documents(quest, fields={"id": "title"})] == ["Alien (film)"]  # jsonl when mapped


# --- SQuAD ------------------------------------------------------------------------------------------------------


def test_squad_v2_paragraphs_questions_and_qrels(data_dir):
    path = data_dir / "squad2" / "dev-v2.0.json"
    assert detect_format(path) == "squad"
    paragraphs = list(read_documents(path))
    assert len(paragraphs) == 646 and len({p.metadata["article"] for p in paragraphs}) == 16
    first = paragraphs[0]
    assert (first.id, first.title, first.metadata) == ("Normans#0", "Normans", {"article": "Normans", "paragraph": 0})
    assert paragraphs[49].title == "Computational complexity theory"  # underscores of the article name as spaces
    questions = list(read_squad_questions(path))
    assert len(questions) == 6078
    assert sum(q.metadata["is_impossible"] for q in questions) == 3168
    assert all(bool(q.metadata["answers"]) != q.metadata["is_impossible"] for q in questions)
    assert questions[0].metadata["answers"] == ["France"]  # four identical spans, one answer string
    qrels = squad_qrels(questions)
    ids = {p.id for p in paragraphs}
    assert all(list(judged)[0] in ids for judged in qrels.values())


def test_squad_v1_and_errors(tmp_path):
    v1 = {"version": "1.1", "data": [{"title": "A_b", "paragraphs": [
        {"context": "One.", "qas": [{"id": "q1", "question": "Which?", "answers": [{"text": "One", "answer_start": 0}]}]},
        {"context": "Two.", "qas": []}]}]}
    path = write(tmp_path / "v1.json", json.dumps(v1))
    assert detect_format(path) == "squad"
    assert [d.id for d in read_squad_documents(path)] == ["A_b#0", "A_b#1"]
    assert [(q.id, q.metadata["gold_passage"], q.metadata["answers"]) for q in read_squad_questions(path)] == [
        ("q1", "A_b#0", ["One"])]
    del v1["data"][0]["paragraphs"][1]["context"]
    write(path, json.dumps(v1))
    with pytest.raises(InputError, match=r"v1.json\[data 0\].paragraphs\[1\]: field 'context': missing"):
        list(read_squad_documents(path))


@pytest.mark.parametrize("raw, shown", [("1.0", "1.0"), ("1e3", "1000.0"), ("NaN", "nan")])
def test_an_id_written_as_a_fractional_json_number_is_refused_at_its_line(tmp_path, raw, shown):
    """Before: {"_id": 1.0} became the id '1.0', which qrels writing 1 never match (every judgement missed)."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"_id": 7, "text": "a whole number id is fine"}\n{"_id": ' + raw + ', "text": "b"}\n')
    with pytest.raises(InputError, match=rf":2: field '_id': id {shown} is a JSON number with a fraction or exponent"):
        list(read_jsonl_documents(path))
    path.write_text('{"_id": 7, "text": "a whole number id is fine"}\n')
    assert [doc.id for doc in read_jsonl_documents(path)] == ["7"]


def test_a_beir_folder_holding_a_file_and_its_compressed_copy_is_refused(tmp_path):
    """Before: corpus.jsonl was read and corpus.jsonl.gz beside it ignored without a word (or the other way)."""
    import gzip

    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "old"}\n')
    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt") as handle:
        handle.write('{"_id": "d1", "text": "new"}\n')
    with pytest.raises(InputError, match="corpus.jsonl and corpus.jsonl.gz are both here: keep one"):
        list(read_beir_corpus(tmp_path))
    (tmp_path / "corpus.jsonl").unlink()
    assert [doc.text for doc in read_beir_corpus(tmp_path)] == ["new"]


def test_a_title_key_that_no_record_has_is_an_error(tmp_path, scifact_rows):
    """Before: `--field title=KEY` naming a key no record had dropped every title without a word (a wrong text key
    is an error); a key that is there with empty titles is still read."""
    path = tmp_path / "custom.jsonl"
    path.write_text("".join(json.dumps({"docno": r["_id"], "headline": r["title"], "body": r["text"]}) + "\n"
                            for r in scifact_rows[:20]), encoding="utf-8")
    fields = {"id": "docno", "text": "body"}
    with pytest.raises(InputError, match=r"custom.jsonl: no record has the title key 'headlne' named by --field "
                                         r"title=headlne \(keys seen: body, docno, headline\)"):
        list(read_jsonl_documents(path, fields={**fields, "title": "headlne"}))
    titled = list(read_jsonl_documents(path, fields={**fields, "title": "headline"}))
    assert [d.title for d in titled] == [r["title"] for r in scifact_rows[:20]]
    empty = tmp_path / "empty-titles.jsonl"
    empty.write_text("".join(json.dumps({"docno": r["_id"], "headline": "", "body": r["text"]}) + "\n"
                             for r in scifact_rows[:3]), encoding="utf-8")
    assert [d.title for d in read_jsonl_documents(empty, fields={**fields, "title": "headline"})] == ["", "", ""]
