"""Where the dashboard may send a browser back to: a path on this very site, never anywhere else.

Every return target the dashboard renders (a Cancel link, a hidden ``next`` field) or
redirects to (after an action, after signing in) comes from a request, so from whoever
wrote the link. ``local_path`` is the one check all of them go through: a path of this
site, or the fallback. A ``javascript:`` URL, another site (``https://...``, ``//host``,
``/\\host``, which browsers read as ``//host``) and control characters never pass.
"""

from __future__ import annotations

from urllib.parse import urlsplit

MAX_TARGET_CHARS = 2048  # longer return targets are refused, not rendered into every form


def local_path(target: str | None, fallback: str = "/") -> str:
    """``target`` when it is a path on this site (``/...``), else ``fallback``."""
    value = target or ""
    if (not value.startswith("/") or value.startswith("//") or "\\" in value or len(value) > MAX_TARGET_CHARS
            or any(ord(ch) < 32 or ord(ch) == 127 for ch in value)):
        return fallback
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return fallback
    return value
