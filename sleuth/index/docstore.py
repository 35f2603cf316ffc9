"""The document store kept beside every index: ids, document ids, titles and texts, by position."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from sleuth.corpus.model import Passage

DOCSTORE = "docstore.parquet"


class DocStore:
    """Positional store of passages; position i is row i of the index's vectors or BM25 matrix."""

    def __init__(self, ids: list[str], doc_ids: list[str], titles: list[str], texts: list[str]):
        self.ids, self.doc_ids, self.titles, self.texts = ids, doc_ids, titles, texts
        self._position: dict[str, int] | None = None

    @classmethod
    def from_passages(cls, passages: Iterable[Passage], title_separator: str = ", ") -> DocStore:
        ids, doc_ids, titles, texts = [], [], [], []
        for p in passages:
            ids.append(p.id)
            doc_ids.append(p.doc_id)
            titles.append(p.full_title(title_separator))
            texts.append(p.text)
        return cls(ids, doc_ids, titles, texts)

    @classmethod
    def concat(cls, stores: Sequence[DocStore]) -> DocStore:
        """One store of ``stores``' rows in order (shards, or an index plus added passages)."""
        return cls(*([item for store in stores for item in getattr(store, name)]
                     for name in ("ids", "doc_ids", "titles", "texts")))

    def slice(self, offset: int, count: int) -> DocStore:
        """Rows ``offset`` .. ``offset + count - 1`` as a store of their own."""
        end = offset + count
        return DocStore(self.ids[offset:end], self.doc_ids[offset:end], self.titles[offset:end],
                        self.texts[offset:end])

    def __len__(self) -> int:
        return len(self.ids)

    def position(self, item_id: str) -> int | None:
        """Row of an id, or None when absent."""
        if self._position is None:
            self._position = {item_id: i for i, item_id in enumerate(self.ids)}
        return self._position.get(item_id)

    def positions(self, ids: Sequence[str]) -> list[int | None]:
        """Rows of several ids (None where absent)."""
        return [self.position(item_id) for item_id in ids]

    def contents(self) -> list[str]:
        """Title and text of every row, as the encoder and BM25 see them."""
        return [self.content(row) for row in range(len(self.texts))]

    def content(self, row: int) -> str:
        """Title and text of one row, as the encoder and BM25 see them."""
        title, text = self.titles[row], self.texts[row]
        return f"{title} {text}" if title else text

    def save(self, directory: Path) -> None:
        import pyarrow as pa  # imported on use: pyarrow costs half a second of every CLI start
        import pyarrow.parquet as pq

        table = pa.table({"id": self.ids, "doc_id": self.doc_ids, "title": self.titles, "text": self.texts})
        pq.write_table(table, directory / DOCSTORE)

    @classmethod
    def load(cls, directory: Path) -> DocStore:
        import pyarrow.parquet as pq

        table = pq.read_table(directory / DOCSTORE)
        return cls(*(table.column(name).to_pylist() for name in ("id", "doc_id", "title", "text")))
