"""The one check for a line a caller asks to write (a stored fact, a field of an experience chain), and
the one for a line the product quotes from memory into a record or a note (``quotable``)."""

from __future__ import annotations

from mcp_memory.errors import MemoryInputError
from mcp_memory.safety.injection import looks_like_injection
from mcp_memory.safety.secrets import find_secrets, redact_secrets
from mcp_memory.safety.text import clean_memory_text


def checked_line(value: object, name: str, limit: int) -> str:
    """``value`` as one clean line, or ``MemoryInputError`` saying why it cannot be written.

    Control and invisible characters are removed and whitespace is squeezed; an empty or overlong
    result, a secret or text that reads as instructions to a model is refused, naming ``name``.
    """
    if not isinstance(value, str):
        raise MemoryInputError(f"{name} must be a string")
    text = " ".join(clean_memory_text(value).split())
    if not text:
        raise MemoryInputError(f"{name} is empty (or only control or invisible characters): nothing to write")
    if len(text) > limit:
        raise MemoryInputError(f"{name} is {len(text)} characters; at most {limit} are allowed")
    secrets = find_secrets(text)
    if secrets:
        kinds = ", ".join(sorted({m.kind for m in secrets}))
        raise MemoryInputError(f"not written: {name} contains a secret ({kinds}); secrets are never written to memory")
    if looks_like_injection(text):
        raise MemoryInputError(f"not written: {name} reads as instructions to a model, not as something to remember")
    return text


def quotable(text: str) -> str | None:
    """``text`` as one line the product may quote into a record or a note (an episode, the sleep note):
    secrets redacted, None when it reads as instructions. Unlike ``checked_line`` it does not refuse:
    the text is already somewhere (a transcript, a file edited by hand) and is being repeated."""
    flat = redact_secrets(" ".join(clean_memory_text(str(text)).split()))
    return None if looks_like_injection(flat) else flat
