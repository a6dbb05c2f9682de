"""Text as the filters see it, and text fit to be written into a memory file.

Two different jobs:

* ``normalise_for_filters`` is what the secret and injection detectors read. Attackers and
  copy-paste hide a token behind look-alike forms: fullwidth letters (ｓｋ－ｐｒｏｊ), a
  zero-width space inside ``sk-...``, a soft hyphen, an ANSI colour code, a non-breaking
  space. Unicode NFKC folds compatibility forms, and every invisible format character and
  control is dropped, so one pattern catches all the spellings. The result is for detection
  only: it is never written anywhere.
* ``decoded_for_filters`` is the same view with HTML character references (``&#116;``,
  ``&lt;``) and percent-escapes (``%74``) decoded, as a browser or a URL parser decodes them
  before anything acts on the text: ``/?&#116;oken=...`` in a markdown link is a ``token=``
  once rendered. Every filter reads it besides the plain view.
* ``clean_memory_text`` is what store and capture write. Control characters (NUL, BEL,
  backspace, ESC sequences, C1 controls) never reach a file: one NUL makes the whole file
  invalid UTF-8 for most tools. Invisible characters that carry no meaning are removed;
  joiners that some scripts and emoji need are kept. Text with nothing visible left is empty.
"""

from __future__ import annotations

import html
import re
import unicodedata
from urllib.parse import unquote

# ANSI escape sequences (CSI ``ESC [ ... final``, OSC ``ESC ] ... BEL|ESC \``, and two-byte ESC x).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
# C0 controls except tab and newline (CR is dropped too: lines end with "\n"), DEL and C1 controls.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Invisible characters with no meaning in a note: zero-width space, word joiner, invisible
# operators, BOM, Mongolian vowel separator, soft hyphen, and the bidirectional overrides and
# isolates that can make a line read differently from what it holds ("Trojan Source").
_MEANINGLESS_INVISIBLE = re.compile(r"[\u00ad\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
# Zero-width joiners: needed inside emoji sequences and some scripts (Persian, Indic), so kept
# in stored text, but never allowed to be all there is.
_JOINERS = re.compile(r"[\u200c\u200d\u034f]")


def normalise_for_filters(text: str) -> str:
    """``text`` folded for detection: NFKC, no format characters or controls, spaces squeezed.

    Line breaks survive (patterns may work line by line); every other run of whitespace,
    including no-break and ideographic spaces, becomes one ASCII space.
    """
    text = _ANSI.sub("", text)
    text = unicodedata.normalize("NFKC", text)
    out = []
    for ch in text:
        if ch == "\n":
            out.append(ch)
        elif ch.isspace():
            out.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cf"):
            continue  # controls and invisible format characters (zero-width, bidi, soft hyphen)
        else:
            out.append(ch)
    return re.sub(r"[ ]{2,}", " ", "".join(out))


_ENCODED = re.compile(r"&(?:#\d+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{1,31});?|%[0-9A-Fa-f]{2}")
_DECODE_ROUNDS = 3  # "&amp;#116;" and "%2574" take two; more layers than this is noise


def decoded_for_filters(text: str) -> str:
    """``normalise_for_filters(text)`` with character references and percent-escapes decoded, repeatedly.

    Equal to the plain view when ``text`` holds neither (the common case costs one search).
    Like the plain view, it is for detection only and never written anywhere.
    """
    current = normalise_for_filters(text)
    for _ in range(_DECODE_ROUNDS):
        if not _ENCODED.search(current):
            break
        decoded = normalise_for_filters(unquote(html.unescape(current), errors="replace"))
        if decoded == current:
            break
        current = decoded
    return current


def clean_memory_text(text: str) -> str:
    """``text`` without control characters or meaningless invisible ones; "" if nothing visible is left.

    Tabs and newlines are kept (callers flatten or keep lines as they need); a carriage
    return becomes a newline unless a newline follows it.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI.sub("", text)
    text = _CONTROLS.sub("", text)
    text = _MEANINGLESS_INVISIBLE.sub("", text)
    if not _JOINERS.sub("", text).strip():
        return ""
    return text
