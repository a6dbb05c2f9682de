"""What remote endpoints (embeddings, rerankers, chat models) say about when to try again."""

from __future__ import annotations

import math
from typing import Any


def retry_after_seconds(headers: Any) -> float | None:
    """The ``Retry-After`` header of a response as seconds; None when absent or not a number.

    An HTTP date is rare from APIs and is ignored: the caller's own backoff applies.
    """
    raw = headers.get("retry-after") if headers is not None else None
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
