"""Gates for text on its way into memory: control characters, secrets, prompt injections.

Memory is written from conversations and read back into future prompts, so three things
must never pass: bytes that corrupt the markdown files (``text``), credentials (``secrets``)
and text that tries to steer a model (``injection``). Detection reads a normalised form of
the text (``normalise_for_filters``), so look-alike and invisible characters hide nothing.
"""

from mcp_memory.safety.injection import injection_family, looks_like_injection
from mcp_memory.safety.lines import quotable
from mcp_memory.safety.secrets import SecretMatch, contains_secret, find_secrets, redact_secrets
from mcp_memory.safety.text import clean_memory_text, normalise_for_filters

__all__ = [
    "SecretMatch", "clean_memory_text", "contains_secret", "find_secrets",
    "injection_family", "looks_like_injection", "normalise_for_filters", "quotable", "redact_secrets",
]
