"""Memory text as safe HTML: markdown with line anchors, source lines, highlighted matches.

Memory files are written from conversations, so nothing in them may run in the page: the
markdown parser treats raw HTML as text and refuses ``javascript:`` links, and its output
goes through a sanitizer that keeps only formatting tags and plain attributes (no event
handlers, no styles, links only to http, https, mailto or the page itself). The page's
Content-Security-Policy (``app.py``) forbids inline scripts besides.

Every line of the file gets an anchor ``#L<n>`` (citations are ``path#Lstart-Lend``): a block
starting on a line carries a visible line number, and the other lines of a block an empty
anchor at its start. Lines of a cited range can be marked (class ``hl``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape

from mcp_memory.core.analysis import QUERY_STOPWORDS

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img",
    "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}
_ATTRIBUTES = {
    "*": {"id", "class", "title", "data-line"},
    "a": {"href"},
    "img": {"src", "alt"},
    "ol": {"start"},
}
_URL_SCHEMES = {"http", "https", "mailto"}
_WORD = re.compile(r"\w{2,}", re.UNICODE)


def _parser() -> MarkdownIt:
    # CommonMark with raw HTML off: a <script> or <img onerror=...> in a memory is shown as text.
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"])


_MD = _parser()


@dataclass(frozen=True)
class SourceLine:
    number: int
    text: str
    marked: bool


def sanitize(html: str) -> str:
    """``html`` with every tag and attribute outside the allowed formatting set removed."""
    return nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes=_URL_SCHEMES,
                     link_rel="noopener noreferrer nofollow", strip_comments=True)


def render_markdown(text: str, marked: tuple[int, int] | None = None) -> Markup:
    """``text`` as sanitized HTML with an anchor ``L<n>`` per line; lines in ``marked`` (1-based, inclusive) marked."""
    tokens = _MD.parse(text)
    total = text.count("\n") + 1
    marked = clamp_range(marked, total)
    blocks = [i for i, t in enumerate(tokens) if t.map and t.type != "inline" and t.nesting >= 0]
    owner: dict[int, int] = {}  # 1-based line -> index of the innermost block holding it
    for i in blocks:
        start, end = tokens[i].map or (0, 0)
        for line in range(start + 1, end + 1):
            owner[line] = i  # inner blocks come after their parents in the stream: they win
    anchors: dict[int, list[str]] = {}  # token index -> anchor HTML to put at its start
    pending: list[int] = []  # lines outside every block (blank lines): anchored at the next block
    for line in range(1, total + 1):
        holder = owner.get(line)
        if holder is None:
            pending.append(line)
            continue
        start = (tokens[holder].map or (0, 0))[0] + 1
        here = anchors.setdefault(holder, [])
        here.extend(f'<span id="L{waiting}"></span>' for waiting in pending)
        pending = []
        if line == start:
            here.append(f'<a class="ln" id="L{line}" href="#L{line}">{line}</a>')
        else:
            here.append(f'<span id="L{line}"></span>')
    if marked:
        for i in {owner[n] for n in range(marked[0], marked[1] + 1) if n in owner}:
            _mark(tokens, i)
    out: list[Token] = []
    for i, token in enumerate(tokens):
        html = "".join(anchors.get(i, []))
        if html and token.nesting == 0:  # a leaf block (code, rule): the anchors go before it
            out.append(_html(html))
        out.append(token)
        if html and token.nesting == 1:
            out.append(_html(html))
    tail = "".join(f'<span id="L{n}"></span>' for n in pending)
    return Markup(sanitize(_MD.renderer.render(out, _MD.options, {}) + tail))


def _mark(tokens: list[Token], index: int) -> None:
    """Add class ``hl`` to block ``index``, or to the nearest shown block around it (a tight list hides its <p>)."""
    token = tokens[index]
    if token.hidden:
        depth = 0
        for j in range(index - 1, -1, -1):
            depth += tokens[j].nesting
            if depth > 0 and not tokens[j].hidden:
                token = tokens[j]
                break
    token.attrJoin("class", "hl")


def _html(html: str) -> Token:
    token = Token("html_block", "", 0)
    token.content = html
    return token


def source_lines(text: str, marked: tuple[int, int] | None = None) -> list[SourceLine]:
    """Every line of ``text`` with its number, marked when inside ``marked``."""
    lines = text.split("\n")
    low, high = clamp_range(marked, len(lines)) or (0, -1)
    return [SourceLine(n, line.rstrip("\r"), low <= n <= high) for n, line in enumerate(lines, 1)]


def query_terms(query: str) -> list[str]:
    """The words of a query worth marking in a hit (two characters or more, not stopwords), longest first."""
    words = {w.casefold() for w in _WORD.findall(query or "")} - QUERY_STOPWORDS
    return sorted(words, key=len, reverse=True)[:20]


def highlight(text: str, terms: list[str]) -> Markup:
    """``text`` escaped, with each occurrence of ``terms`` wrapped in <mark>."""
    if not terms:
        return escape(text)
    # Whole words, with a short ending (deploy: deploys, deployed); text without spaces (CJK) anywhere.
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(t)}\w{{0,3}}(?!\w)" if t.isascii() else re.escape(t)
                                  for t in terms), re.IGNORECASE)
    out: list[str] = []
    position = 0
    for match in pattern.finditer(text):
        out.append(str(escape(text[position : match.start()])))
        out.append(f"<mark>{escape(match.group(0))}</mark>")
        position = match.end()
    out.append(str(escape(text[position:])))
    return Markup("".join(out))


def clamp_range(marked: tuple[int, int] | None, total: int) -> tuple[int, int] | None:
    """``marked`` cut to the lines 1..``total`` a file has; None when none of it is inside.

    A range comes from the URL (``?hl=1-9999999``): cut first, so no work is ever done per
    line that is not in the file.
    """
    if marked is None:
        return None
    start, end = max(1, marked[0]), min(total, marked[1])
    return (start, end) if start <= end else None


def parse_range(value: str | None) -> tuple[int, int] | None:
    """``"12-14"`` or ``"12"`` as a 1-based inclusive range; None when absent or malformed."""
    match = re.fullmatch(r"\s*L?(\d{1,7})(?:\s*-\s*L?(\d{1,7}))?\s*", value or "")
    if not match:
        return None
    start = int(match.group(1))
    end = int(match.group(2) or start)
    return (start, end) if 1 <= start <= end else None
