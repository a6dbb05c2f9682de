"""Text as the filters see it, and text fit to be written into a memory file.

Detection views on one side, text fit to be written on the other:

* ``normalise_for_filters`` is what the secret and injection detectors read. Attackers and
  copy-paste hide a token behind look-alike forms: fullwidth letters (ｓｋ－ｐｒｏｊ), a
  zero-width space inside ``sk-...``, a soft hyphen, an ANSI colour code, a non-breaking
  space, a Hangul filler. Unicode NFKC folds compatibility forms, and every control, invisible
  format character and default-ignorable code point is dropped, so one pattern catches all
  the spellings. The result is for detection
  only: it is never written anywhere.
* ``decoded_for_filters`` is the same view with HTML character references (``&#116;``,
  ``&lt;``) and percent-escapes (``%74``) decoded, as a browser or a URL parser decodes them
  before anything acts on the text: ``/?&#116;oken=...`` in a markdown link is a ``token=``
  once rendered. Every filter reads it besides the plain view.
* ``clean_memory_text`` is what store and capture write. Control characters (NUL, BEL,
  backspace, ESC sequences, C1 controls) never reach a file: one NUL makes the whole file
  invalid UTF-8 for most tools. Invisible characters that carry no meaning are removed;
  joiners that some scripts and emoji need are kept. Text with nothing visible left is empty.
* ``latin_skeleton`` is a further detection view: combining marks removed, and letters of other
  scripts that look Latin folded to their Latin twins in words that read as Latin, so
  ``Ignоre`` with a Cyrillic ``о`` reads as ``Ignore``. ``CONFUSABLES`` is the one table of
  look-alikes both detectors use.
* ``unspelled`` is the injection filter's view of words spelled out letter by letter or run
  together: ``I g n o r e``, ``i.g.n.o.r.e`` and ``d-i-s-r-e-g-a-r-d`` read as the word, and
  ``IGNORE_ALL_PREVIOUS_INSTRUCTIONS`` or ``ignore-all-previous-instructions`` as words.
* ``decoded_views`` yields the text as each layer of encoding (HTML references, percent-escapes,
  base64, hex, quoted-printable, ``\\uXXXX``, markdown emphasis) would show it once decoded,
  nested as deep as a size budget allows, so both detectors read what a decoder would act on.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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
    return re.sub(r"[ ]{2,}", " ", fold_for_filters(_ANSI.sub("", text)))


# Unicode Default_Ignorable_Code_Point: characters that render as nothing. Besides the format
# characters (Cf) they include fillers that are letters (Hangul fillers U+115F, U+1160, U+3164,
# U+FFA0), marks (combining grapheme joiner U+034F, variation selectors) and unassigned code
# points reserved to be invisible. Any of them inside "Ig?nore" hides the word from a pattern.
DEFAULT_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


# Whitespace other than a line break, and the blank Braille cell, which prints as a space.
_BLANKS = re.compile("[^\\S\n]|\u2800")


def fold_for_filters(text: str) -> str:
    """NFKC of ``text`` with controls, format characters and default-ignorables dropped, spaces made ASCII.

    No squeezing: applied to one character (with its marks) it gives exactly what that character
    becomes in ``normalise_for_filters``, which is how secret spans are mapped back.
    """
    folded = _BLANKS.sub(" ", unicodedata.normalize("NFKC", text))
    if folded.replace("\n", "").isprintable():  # no control or format character: one regex pass
        return DEFAULT_IGNORABLE.sub("", folded)
    out = []
    for ch in folded:
        if ch == "\n":
            out.append(ch)
        elif ch.isspace() or ch == "\u2800":  # the blank Braille cell prints as a space
            out.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cf") or DEFAULT_IGNORABLE.match(ch):
            continue  # controls, invisible format characters and fillers (zero-width, bidi, soft hyphen)
        else:
            out.append(ch)
    return "".join(out)


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


# Three or more single letters, each pair kept apart by the same one separator ("I g n o r e",
# "i.g.n.o.r.e", "d-i-s-r-e-g-a-r-d"); a double space between two such runs still parts words.
_SPELLED = re.compile(
    r"(?<![^\W_])[^\W\d_](?P<sep>[ .\-_/|*+~\u00b7\u2022])[^\W\d_](?:(?P=sep)[^\W\d_])+(?![^\W_])"
)
# Three or more words of letters run together by "_" or "-", not part of a path or a name with digits.
_JOINED_WORDS = re.compile(r"(?<![\w./~-])[^\W\d_]+(?:[_-][^\W\d_]+){2,}(?![\w./~-])")


def unspelled(text: str) -> str | None:
    """``text`` with words spelled letter by letter joined, and three or more words run together by
    ``_`` or ``-`` parted by spaces; None when that changes nothing. A detection view, never written."""
    joined = _SPELLED.sub(lambda m: m.group(0).replace(m.group("sep"), ""), text)
    parted = _JOINED_WORDS.sub(lambda m: m.group(0).replace("_", " ").replace("-", " "), joined)
    return parted if parted != text else None


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


# ----- look-alike letters: one table for every detector ------------------------------------------

# Letters of other scripts (and Latin small capitals and modifier letters that NFKC keeps) that
# a reader takes for a Latin letter, each folded to that letter, as in the confusables data of
# Unicode TR39, one character for one. Both detectors read text folded with this table, so
# "Ignоre" (Cyrillic о), "Ignօre" (Armenian օ) and "Ignᴏre" (small capital) read as "Ignore",
# and "sк-proj-..." (Cyrillic к) as "sk-proj-...". Dashes that look like "-" are folded too.
_CONFUSABLE_PAIRS = (
    # Cyrillic: each pair is a look-alike and its Latin letter
    "аa АA вb ВB сc СC ԁd ԀD еe ЕE һh ҺH іi ІI јj ЈJ кk КK ӏl ӀI мm МM нH НH оo ОO рp РP ԛq ԚQ гr ѕs ЅS "
    "тT ТT уy УY үy ҮY ұy хx ХX ҳx ԝw ԜW ьb Ьb ъb пn ԍG ѵv ѴV ѡw ҫc ҪC ӡ3",
    # Greek
    "αa ΑA βB ΒB γy δd εe ΕE ζZ ΖZ ηn ΗH ιi ΙI κk ΚK μu ΜM νv ΝN οo ΟO ρp ΡP τt ΤT υu ΥY χx ΧX ωw "
    "ϲc ϹC ϳj ͿJ ϜF ϝf σo",
    # Armenian
    "աw հh ոn սu օo զq ցg քp լl ՕO ՍU ՏS ԼL ՈN",
    # Cherokee capitals (their small forms are added by _confusables)
    "ᎪA ᏴB ᏟC ᎠD ᎬE ᏀG ᎻH ᎥI ᎫJ ᏦK ᏞL ᎷM ᏢP ᎡR ᏚS ᎢT ᏙV ᏔW ᏃZ ᎽY ᏒR ᏂH",
    # Latin small capitals, letter-like forms and modifier letters that NFKC leaves alone
    "ᴀa ʙb ᴄc ᴅd ᴇe ꜰf ɢg ʜh ɪi ᴊj ᴋk ʟl ᴍm ɴn ᴏo ᴘp ꞯq ʀr ꜱs ᴛt ᴜu ᴠv ᴡw ʏy ᴢz ɑa ɒa ıi ȷj ɩi ʋu ɯw ɾr "
    "ƖI ƽ5",
    # Dashes and minus signs
    "‐- ‑- ‒- –- —- ―- −- ﹣- －-",
)


def _confusables() -> dict[int, str]:
    """The look-alike table as a translate map, with the small forms of Cherokee capitals."""
    table: dict[int, str] = {}
    for pairs in _CONFUSABLE_PAIRS:
        for pair in pairs.split():
            if len(pair) != 2:
                raise ValueError(f"look-alike table: {pair!r} is not one letter and its Latin twin")
            source, target = pair[0], pair[1]
            table.setdefault(ord(source), target)
            small = source.lower()
            if "\u13a0" <= source <= "\u13f5" and len(small) == 1 and small != source:
                table.setdefault(ord(small), target.lower())
    return table


CONFUSABLES: dict[int, str] = _confusables()


class _CharFold(dict[int, "str | None"]):
    """A ``str.translate`` map filled on demand: each character with its combining marks removed.

    A combining mark alone is dropped; a precomposed letter (é, ǖ) becomes its base letter; with
    ``confusables``, the base letter is then folded to its Latin look-alike. Every character maps
    to at most one, so a view is the text with some characters replaced and some dropped.
    """

    def __init__(self, confusables: bool) -> None:
        super().__init__()
        self._confusables = confusables

    def __missing__(self, code: int) -> str | None:
        char = chr(code)
        if unicodedata.category(char) == "Mn":
            value: str | None = None
        else:
            parts = unicodedata.normalize("NFD", char)
            base = parts[0] if all(unicodedata.category(p) == "Mn" for p in parts[1:]) else char
            value = CONFUSABLES.get(ord(base), base) if self._confusables else base
        self[code] = value
        return value


_UNMARKED = _CharFold(confusables=False)
_SKELETON = _CharFold(confusables=True)


# A run of characters between spaces and ASCII punctuation: a word, with its marks and digits.
_WORD_RUN = re.compile(r"[^\s!-/:-@\[-`{-~]+")


@functools.cache
def _script(char: str) -> str:
    """The script a letter belongs to, from its name ("LATIN", "CYRILLIC", "GREEK", ...)."""
    return unicodedata.name(char, "").split(" ", 1)[0]


def _reads_as_latin(word: str, folded: str) -> bool:
    """Whether look-alikes in ``word`` should be read as Latin: it mixes scripts or holds Latin.

    "Ignоre" (Latin with a Cyrillic о), "ɪɢɴᴏʀᴇ" (Latin small capitals) and "Ꭵgnore" do; a
    word written in one other script ("пароль", "οδηγίες") does not, so its own letters stay.
    """
    if not folded.isascii() and not any(ch.isascii() and ch.isalpha() for ch in word):
        return False
    scripts = {_script(ch) for ch in word if ch.isalpha()}
    return "LATIN" in scripts or len(scripts) > 1


def latin_skeleton(text: str) -> tuple[str, list[int] | None]:
    """The detection view both detectors read besides the text: no marks, look-alikes read as Latin.

    Combining marks are dropped from every word ("précédentes", "προηγούμενες", "trước" lose
    their accents); in words that read as Latin (``_reads_as_latin``) the look-alike letters of
    ``CONFUSABLES`` become their Latin twins, so "Ignоre", "sк-proj" and "pаssword" read as
    what they look like, while a real word of another script keeps its letters for the rules
    and names written in that script. Look-alike dashes are folded everywhere. Returns the view
    and, when characters were dropped, the index in ``text`` of each of its characters (None:
    one for one, the offsets of ``text`` hold).
    """
    if text.isascii():
        return text, None
    pieces: list[str] = []
    index: list[int] = []
    position = 0
    dropped = False
    for match in _WORD_RUN.finditer(text):
        word = match.group(0)
        if word.isascii():
            continue
        folded = word.translate(_SKELETON)
        if not _reads_as_latin(word, folded):
            folded = word.translate(_UNMARKED)
        if folded == word:
            continue
        pieces.append(text[position:match.start()])
        index += range(position, match.start())
        pieces.append(folded)
        if len(folded) == len(word):
            index += range(match.start(), match.end())
        else:
            dropped = True
            index += [match.start() + i for i, ch in enumerate(word) if _SKELETON[ord(ch)] is not None]
        position = match.end()
    pieces.append(text[position:])
    index += range(position, len(text))
    out = "".join(pieces).translate(_DASHES)
    return out, (index if dropped else None)


_DASHES = {code: target for code, target in CONFUSABLES.items() if target == "-"}


# ----- decoded views: what a decoder would make of the text --------------------------------------


@dataclass(frozen=True)
class View:
    """A detection view of a base text, and where each of its characters came from.

    ``starts[i]:ends[i]`` is the span of the base text that character ``i`` of ``text`` stands
    for (a decoded character stands for the whole encoded run). None means the base itself.
    """

    text: str
    starts: list[int] | None = None
    ends: list[int] | None = None
    depth: int = 0
    ascii_decoded: bool = True  # every decoded piece is ASCII: no new look-alikes came in

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the base text behind ``text[start:end]``."""
        if self.starts is None or self.ends is None or end <= start:
            return start, end
        return self.starts[start], self.ends[end - 1]


_Replacement = tuple[int, int, str]  # start, end and the decoded text of one encoded run


def _replaced(view: View, replacements: list[_Replacement]) -> View:
    """``view`` with each encoded run replaced by its decoded text, origins carried through."""
    base = len(view.text)
    starts = view.starts if view.starts is not None else list(range(base))
    ends = view.ends if view.ends is not None else list(range(1, base + 1))
    text: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    position = 0
    for start, end, decoded in replacements:
        text.append(view.text[position:start])
        new_starts += starts[position:start]
        new_ends += ends[position:start]
        text.append(decoded)
        new_starts += [starts[start]] * len(decoded)
        new_ends += [ends[end - 1]] * len(decoded)
        position = end
    text.append(view.text[position:])
    new_starts += starts[position:]
    new_ends += ends[position:]
    ascii_decoded = view.ascii_decoded and all(decoded.isascii() for _, _, decoded in replacements)
    return View("".join(text), new_starts, new_ends, view.depth + 1, ascii_decoded)


_MIN_DECODED = 4  # fewer decoded characters than this say nothing to a detector


def printable_text(raw: bytes) -> str | None:
    """``raw`` as UTF-8 text when it is text (95% printable), else None: binary is no message."""
    decoded = None
    for cut in range(4):  # a truncated run may end inside a multi-byte character
        try:
            decoded = raw[: len(raw) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    if not decoded or len(decoded) < _MIN_DECODED:
        return None
    printable = sum(ch.isprintable() or ch in "\n\t\r" for ch in decoded)
    return decoded if printable >= 0.95 * len(decoded) else None


_MAX_BLOB = 8192  # base64 characters decoded per blob


def decode_base64(blob: str, limit: int | None = None) -> bytes | None:
    """The bytes of a base64 or base64url blob; a truncated blob decodes as far as it goes."""
    blob = blob.rstrip("=")
    if limit is not None:
        blob = blob[: limit - limit % 4]
    blob = blob[:_MAX_BLOB]  # a huge blob is read as far as the bound
    if len(blob) % 4 == 1:
        blob = blob[:-1]  # cut inside a quantum: the last character carries no whole byte
    padded = blob + "=" * (-len(blob) % 4)
    try:
        if "-" in blob or "_" in blob:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def base64_text(blob: str, min_bytes: int = 12) -> str | None:
    """The text a base64 blob decodes to, or None for binary, too little, or no base64 at all."""
    if blob.isalpha() or blob.isdigit() or not (any(c.isdigit() for c in blob) or "=" in blob or "+" in blob):
        return None  # a long word or number, not an encoding
    raw = decode_base64(blob)
    if raw is None or len(raw) < min_bytes:
        return None
    return printable_text(raw)


_ENTITY_RUN = re.compile(r"(?:&(?:#\d+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{1,31});?|%[0-9A-Fa-f]{2})+")
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{16,}={0,2}")
_HEX_RUN = re.compile(
    r"(?<![0-9A-Za-z\\])(?:0[xX])?(?:[0-9a-fA-F]{2}){8,}(?![0-9A-Za-z])"  # 49676e6f72... or 0x4967...
    r"|(?<![0-9A-Za-z])(?:[0-9a-fA-F]{2}[ :,\-]){7,}[0-9a-fA-F]{2}(?![0-9A-Za-z])"  # 49 67 6e 6f ...
    r"|(?:\\[xX][0-9a-fA-F]{2}){4,}"  # \x49\x67...
    r"|(?<![0-9A-Za-z])(?:0[xX][0-9a-fA-F]{2}[ ,]{0,2}){4,}"  # 0x49 0x67 ...
)
_HEX_DIGITS = re.compile(r"0[xX](?=[0-9a-fA-F]{2})|\\[xX]|[^0-9a-fA-F]")
_QUOTED_PRINTABLE = re.compile(r"(?:=[0-9A-Fa-f]{2}|=\r?\n)+")
_UNICODE_ESCAPES = re.compile(r"(?:\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\u\{[0-9a-fA-F]{1,6}\})+")
_ESCAPE_CODE = re.compile(r"\\u\{([0-9a-fA-F]{1,6})\}|\\[uU]([0-9a-fA-F]{4,8})")
# Emphasis and code markers inside or around words: "**Ignore** previous *instructions*",
# "Ig**nore**". A reader sees the words without them.
_MARKDOWN_MARKERS = re.compile(r"[*~`]+|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])|__+")


def _decode_entities(run: str) -> str | None:
    """HTML character references and percent-escapes, as a browser or URL parser decodes them."""
    decoded = unquote(html.unescape(run), errors="replace")
    return decoded if decoded != run else None


def _decode_base64(run: str) -> str | None:
    """Base64 or base64url that decodes to text."""
    return base64_text(run, min_bytes=_MIN_DECODED)


def _decode_hex(run: str) -> str | None:
    """Hex that decodes to text: plain, spaced or colon-separated, ``\\x41`` and ``0x41`` forms."""
    digits = _HEX_DIGITS.sub("", run)
    return None if len(digits) % 2 else printable_text(bytes.fromhex(digits))


def _decode_quoted_printable(run: str) -> str:
    """Quoted-printable escapes (``=20``, ``=E2=80=8B``) and soft line breaks (``=`` at a line end)."""
    raw = bytes.fromhex(re.sub(r"=\r?\n", "", run).replace("=", ""))
    return raw.decode("utf-8", errors="replace")


def _decode_unicode_escapes(run: str) -> str | None:
    """``\\u0041``, ``\\U00000041`` and ``\\u{41}`` escapes, surrogate pairs joined."""
    codes = [int(m.group(1) or m.group(2), 16) for m in _ESCAPE_CODE.finditer(run)]
    if any(code > 0x10FFFF for code in codes):
        return None
    return "".join(map(chr, codes)).encode("utf-16", "surrogatepass").decode("utf-16", errors="replace")


def _drop_markers(run: str) -> str:
    """Emphasis and code markers removed."""
    return ""


def _replacements(pattern: re.Pattern[str], decode: Callable[[str], str | None], text: str) -> list[_Replacement]:
    """Every run of ``pattern`` in ``text`` that ``decode`` reads, with what it reads as."""
    out = []
    for match in pattern.finditer(text):
        decoded = decode(match.group(0))
        if decoded is not None:
            out.append((match.start(), match.end(), decoded))
    return out


# Each decoder, after the characters one of which its encoding needs (none: always tried), with
# the runs it reads.
_DECODERS: tuple[tuple[str, re.Pattern[str], Callable[[str], str | None]], ...] = (
    ("&%", _ENTITY_RUN, _decode_entities),
    ("\\", _UNICODE_ESCAPES, _decode_unicode_escapes),
    ("=", _QUOTED_PRINTABLE, _decode_quoted_printable),
    ("", _HEX_RUN, _decode_hex),
    ("", _BASE64_RUN, _decode_base64),
    ("*_~`", _MARKDOWN_MARKERS, _drop_markers),
)
_MAX_VIEWS = 12  # decoded views per text, besides the text itself
_BUDGET_BASE = 8192  # characters of decoded views any text may have, however short...
_BUDGET_FACTOR = 2  # ...plus this many times its own length


def decoded_views(text: str, normalised: str | None = None) -> Iterator[View]:
    """The normalised text, then every view a layer of decoding makes of it, breadth first.

    Each decoder is applied to each view it changes, so base64 of hex of base64 is unwrapped as
    far as the size budget goes (about twice the text, at least 8 KB), not to a fixed depth; the
    cost stays a small multiple of reading the text once. Views are for detection only.
    ``normalised`` is ``normalise_for_filters(text)`` when the caller has it already.
    """
    base = View(normalise_for_filters(text) if normalised is None else normalised)
    yield base
    budget = _BUDGET_BASE + _BUDGET_FACTOR * len(base.text)
    seen = {base.text}
    queue = [base]
    made = 0
    while queue:
        view = queue.pop(0)
        for markers, pattern, decode in _DECODERS:
            if markers and not any(marker in view.text for marker in markers):
                continue
            replacements = _replacements(pattern, decode, view.text)
            if not replacements:
                continue
            decoded = _replaced(view, [(s, e, normalise_for_filters(d)) for s, e, d in replacements])
            if decoded.text in seen:
                continue
            budget -= len(decoded.text)
            if budget < 0 or made >= _MAX_VIEWS:
                return
            seen.add(decoded.text)
            made += 1
            yield decoded
            queue.append(decoded)
