"""The one small interface every capture extractor implements (beside ``embedding.Embedder``)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from mcp_memory.capture.facts import Fact
    from mcp_memory.capture.filters import Candidate


class Extractor(Protocol):
    """Turns the candidate messages of a conversation into facts worth remembering.

    ``name`` says which extractor answered (``rules``, ``llm``, ``sampling``); it is reported
    with every capture. ``extract`` may raise ``ExtractionError``: the caller then falls back
    on the rules. Whatever it returns is checked again before anything is written.
    """

    name: str

    def extract(self, candidates: list[Candidate], today: dt.date) -> list[Fact]:
        """The facts ``candidates`` state, with relative dates made absolute against ``today``."""
        ...
