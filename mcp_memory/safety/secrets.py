"""Credentials in text on its way into memory.

Memory is plain markdown replayed into future prompts: a key written there leaks to every
later model call and every copy of the folder. Detection is by rules (offline, exact,
testable), grouped by family. The rules that are data (the provider token formats, the names
that mean secret and the word lists that judge a value) live in ``rules/secrets.toml``, which
explains how to extend them; named values are read by ``secret_values``; this module holds the
rest of the engine and the public functions.

* **Provider tokens**: the documented formats of common providers (OpenAI, Anthropic,
  GitHub, GitLab, AWS, Google, Slack, Stripe, Hugging Face, SendGrid, npm, Discord,
  Telegram, PyPI, Docker Hub, DigitalOcean, Shopify, Mailgun, Mailchimp, Heroku, Vault,
  Doppler, Grafana, Postman, New Relic, Linear, age, Atlassian, Databricks, Notion,
  Supabase, Sentry, Azure, Tencent Cloud, Cloudflare Origin CA and more), JSON Web Tokens,
  ``Bearer`` values, webhook URLs that embed their secret, and ``scheme://user:password@``
  URLs. A few formats that are plain hex or base64 (Twilio account SIDs, AWS secret access
  keys, Huawei Cloud AK/SK, Cloudflare API tokens) count only next to their provider's name;
  a Twilio API key (``SK`` and 32 lower-case hex digits) is distinctive enough alone. The
  ``private_key`` and ``private_key_id`` fields of a service-account key file count too.
* **Named values**: a name that means secret (password, passwd, pwd, secret, token, api
  key, access key, private key, client secret, credentials, auth, session / signing key,
  PIN ...) followed by a value. Names are matched inside identifiers (``DB_PASSWORD``,
  ``dbPassword``, ``X-Api-Key``, ``export STRIPE_SECRET_KEY=``, ``"client_secret":``) and
  in sentences in many languages ("the password for the wifi is X", "mot de passe : X",
  "Passwort lautet X", "contraseña: X", "senha é X", "пароль: X", "パスワードは X",
  "비밀번호는 X", "我的密码 X"). The name alone is never enough: the value must look like a
  real credential. Placeholders (``<your-api-key>``, ``xxxx``, ``${API_KEY}``,
  ``changeme``), references (``os.environ["API_KEY"]``, ``settings.SECRET_KEY``, paths,
  URLs, variable names) and ordinary words ("is read from the environment") are not
  secrets; token-like names need a random-looking value, password-like names accept any
  value that is not prose.
* **Encoded secrets**: a base64 blob whose decoded text holds a secret, and private key
  material without its ``-----BEGIN`` line: DER private keys (``MII...``, recognised by their
  ASN.1 structure, so certificates and public keys pass), OpenSSH private key bodies, and
  wrapped runs of binary base64 lines. When the text itself shows nothing, every view
  ``decoded_views`` makes of it (HTML references, percent-escapes, base64, hex in any of its
  spellings, quoted-printable, ``\\uXXXX``, nested until a size budget is spent) is read too;
  a secret found there is reported over the encoded run it came from.
* **Broken tokens**: a token split by a space or a line break ("sk-proj-Abc1 23Def...") is read
  whole in a joined view (``_joined_view``), which removes whitespace only where the pieces
  look like parts of a credential, never between words of prose.
* **Payment cards**: 13-19 digits, grouped as cards are printed (spaces, dots, dashes, or
  nothing), with an issuer prefix of the right length and a valid Luhn check digit.
* **National identity numbers** (``identity_numbers.py``): US Social Security numbers where the
  text names them, and Chinese resident identity numbers by their structure and check character.
* **Login pairs**: "the admin login is admin / Winter2024!", a user name and a password under a
  name for the pair, the password judged as one written after a space (letters with digits).
* **Others**: passwords on a command line (``mysql -pSecret``, ``sshpass -p``) and wallet
  recovery phrases under their name.

Detection reads ``normalise_for_filters(text)``: NFKC folds fullwidth and other
compatibility forms, zero-width characters, soft hyphens, fillers and other default-ignorable
characters are dropped, whitespace is squeezed. A token split by a zero-width space or typed
in fullwidth letters is found like the plain one. Names and tokens are also read in the
Latin skeleton of the text (``latin_skeleton`` in safety/text.py: combining marks dropped and
the look-alike letters of the shared table folded, in words that read as Latin), so
"pаssword" or "sк-proj-" with Cyrillic letters are what they look like. Spans are mapped back
onto the original text (see ``find_secrets``).

Speed matters: ``find_secrets`` runs on every stored fact and every captured message. All
patterns are compiled once (the rule file's on first use), none nests quantifiers over the
same characters, names are found with one prefix-factored pattern, and rules that need long
tokens run only on the runs of 16 or more printable ASCII characters. An ordinary
300-character note takes about 0.1 ms.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from dataclasses import dataclass

from mcp_memory.safety import rulefiles
from mcp_memory.safety.identity_numbers import identity_numbers
from mcp_memory.safety.secret_values import (
    FILE,
    has_upper_lower_digit,
    is_placeholder,
    is_reference,
    looks_random,
    named_values,
    rule_file,
    spaced_password,
)
from mcp_memory.safety.text import (
    DEFAULT_IGNORABLE,
    base64_text,
    decode_base64,
    decoded_views,
    fold_for_filters,
    latin_skeleton,
    normalise_for_filters,
)


@dataclass(frozen=True)
class SecretMatch:
    kind: str
    start: int
    end: int


# --------------------------------------------------------------------------------------
# Provider token formats
# --------------------------------------------------------------------------------------


@functools.cache
def _providers() -> tuple[tuple[re.Pattern[str], ...], dict[str, str]]:
    """The token formats of rules/secrets.toml as two patterns, and each named group's kind.

    Formats starting at a plain boundary ({start}) share one lookbehind outside the
    alternation: it fails at once inside words, which makes the scan several times faster
    than one per format. Built on first use.
    """
    data, fragments = rule_file()
    formats = rulefiles.table(data.get("providers", {}), f"{FILE} [providers]", ("formats",)).get("formats")
    if not isinstance(formats, list) or not formats:
        raise rulefiles.RuleFileError(f"{FILE} [providers]: needs formats, an array of {{kind, pattern}}")
    rules = []
    for number, rule in enumerate(formats, 1):
        where = f"[providers] format {number}"
        rulefiles.table(rule, f"{FILE} {where}", ("kind", "pattern"))
        kind = rule.get("kind")
        if not isinstance(kind, str):
            raise rulefiles.RuleFileError(f"{FILE} {where}: needs a kind")
        rules.append((kind, fragments.pattern(rule.get("pattern"), where)))
    boundary = fragments["start"]
    bounded = [(kind, body[len(boundary):]) for kind, body in rules if body.startswith(boundary)]
    unbounded = [(kind, body) for kind, body in rules if not body.startswith(boundary)]
    patterns = (
        re.compile(boundary + "(?:" + "|".join(f"(?P<b{i}>{body})" for i, (_, body) in enumerate(bounded)) + ")"),
        re.compile("|".join(f"(?P<u{i}>{body})" for i, (_, body) in enumerate(unbounded))),
    )
    kinds = {f"b{i}": kind for i, (kind, _) in enumerate(bounded)} | {
        f"u{i}": kind for i, (kind, _) in enumerate(unbounded)
    }
    return patterns, kinds


# Token rules need 16+ ASCII characters without a space; most notes have few such runs,
# and CJK sentences (no spaces) have them only around ASCII words.
_LONG_RUN = re.compile(r"[!-~]{16,}")  # printable ASCII: tokens survive NFKC as ASCII
# Any case and two or more dashes: "--begin rsa private key--" is still a key being pasted.
_PRIVATE_KEY_HEADER = re.compile(r"(?i)(?<!-)-{2,} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{2,}")
_BEARER = re.compile(r"(?i)(?<![A-Za-z0-9])bearer\s+([A-Za-z0-9_\-.=+/~]{20,})")
# Passwords glued to a client's -p flag (mysql -pSecret), given to sshpass -p, or after the
# user name of curl -u / --user.
_COMMAND_PASSWORD = re.compile(
    r"(?<![\w\-])(?:(?:mysql|mysqldump|mysqladmin|mariadb)(?:[ \t][^\n]{0,80}?)?[ \t]-p|sshpass[ \t]+-p[ \t]*"
    r"|curl(?:[ \t][^\n]{0,120}?)?[ \t](?:-u|--user)[ \t=]?[\"']?[^\s:\"']{1,64}:)"
    r"""(?:(?P<quote>["'])(?P<q>[^"'\n]{3,120})(?P=quote)|(?P<bare>[^\s"'\-][^\s"']{2,120}))"""
)
_URL_CREDENTIAL = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,20}://([^\s:/@]{0,64}):([^\s/@]{3,128})@[A-Za-z0-9\[]")

# Hex or base64 formats without a prefix count only near their provider's name.
_TWILIO_KEY = re.compile(r"(?<![A-Za-z0-9])(?:SK|AC)[0-9a-fA-F]{32}(?![A-Za-z0-9])")
_TWILIO_CONTEXT = re.compile(r"(?i)twilio|auth[ _\-]?token|api[ _\-]?(?:key|secret)|account[ _\-]?sid")
# A Twilio API key SID is "SK" and 32 lower-case hex digits: that shape is Twilio's alone, so it
# needs no context when it mixes digits and letters (an all-digit run could be anything).
_TWILIO_API_KEY = re.compile(r"(?<![A-Za-z0-9])SK(?=[0-9]{0,31}[a-f])(?=[a-f]{0,31}[0-9])[0-9a-f]{32}(?![A-Za-z0-9])")
# Huawei Cloud: a 20-character access key (AK) and a 40-character secret key (SK), with no prefix.
_HUAWEI_ACCESS = re.compile(r"(?<![A-Za-z0-9])[A-Z0-9]{20}(?![A-Za-z0-9])")
# Both cases are required of 40-character secrets: a 40-digit hex commit hash is not one.
_MIXED_CASE_40 = r"(?=[A-Za-z0-9_\-]{0,39}[A-Z])(?=[A-Za-z0-9_\-]{0,39}[a-z])"
_HUAWEI_SECRET = re.compile(r"(?<![A-Za-z0-9])" + _MIXED_CASE_40 + r"[A-Za-z0-9]{40}(?![A-Za-z0-9])")
_HUAWEI_CONTEXT = re.compile(r"(?i)huawei|hwcloud|myhuaweicloud|HW_(?:ACCESS|SECRET)")
# Cloudflare: API tokens are 40 characters, the global API key 37 hex digits; both only by name.
_CLOUDFLARE_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:" + _MIXED_CASE_40 + r"[A-Za-z0-9_\-]{40}|[0-9a-f]{37})(?![A-Za-z0-9_\-])"
)
_CLOUDFLARE_CONTEXT = re.compile(r"(?i)cloudflare|\bCF_(?:API|ACCOUNT|ZONE)|\bcf[ _\-]api")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")
_AWS_CONTEXT = re.compile(r"(?i)(?<![a-z])aws|AKIA|ASIA|secret[ _\-]?access")
_CONTEXT_WINDOW = 160


def _provider_tokens(text: str, runs: list[tuple[int, int]]) -> list[SecretMatch]:
    found: list[SecretMatch] = []
    patterns, kinds = _providers()
    # Providers known only by name nearby: skip their shapes when the name is nowhere in the text.
    huawei, cloudflare = _HUAWEI_CONTEXT.search(text) is not None, _CLOUDFLARE_CONTEXT.search(text) is not None
    for start, end in runs:
        for pattern in patterns:
            for match in pattern.finditer(text, start, end):
                if not _is_placeholder_token(match.group(0)):
                    found.append(SecretMatch(kinds[match.lastgroup or ""], match.start(), match.end()))
        for match in _TWILIO_KEY.finditer(text, start, end):
            if _near(text, match, _TWILIO_CONTEXT):
                found.append(SecretMatch("Twilio key", match.start(), match.end()))
        for match in _TWILIO_API_KEY.finditer(text, start, end):
            found.append(SecretMatch("Twilio key", match.start(), match.end()))
        if huawei:
            found += _named_provider(text, start, end, _HUAWEI_ACCESS, _HUAWEI_CONTEXT, "Huawei Cloud access key")
            found += _named_provider(text, start, end, _HUAWEI_SECRET, _HUAWEI_CONTEXT, "Huawei Cloud secret key")
        if cloudflare:
            found += _named_provider(text, start, end, _CLOUDFLARE_TOKEN, _CLOUDFLARE_CONTEXT, "Cloudflare token")
        for match in _AWS_SECRET.finditer(text, start, end):
            token = match.group(0)
            if has_upper_lower_digit(token) and _near(text, match, _AWS_CONTEXT):
                found.append(SecretMatch("AWS secret access key", match.start(), match.end()))
    return found


def _named_provider(text: str, start: int, end: int, shape: re.Pattern[str], context: re.Pattern[str],
                    kind: str) -> list[SecretMatch]:
    """Random-looking runs of ``shape`` in ``text[start:end]`` with the provider's name nearby."""
    found = []
    for match in shape.finditer(text, start, end):
        token = match.group(0)
        if looks_random(token, min_length=20) and any(ch.isdigit() for ch in token) and _near(text, match, context):
            found.append(SecretMatch(kind, match.start(), match.end()))
    return found


# A Google Cloud service-account key file: its "private_key" and "private_key_id" fields. The
# id alone already points at one live key, and a "service_account" JSON holding either is the
# key file being pasted.
_SERVICE_ACCOUNT_FIELD = re.compile(
    r"""(?i)["']?private_key(?P<id>_id)?["']?\s*[:=]\s*["']?(?P<value>[A-Za-z0-9+/=\\\-]{16,})"""
)


def _service_account_keys(text: str) -> list[SecretMatch]:
    """The key and key id fields of a cloud service-account key file."""
    found = []
    for match in _SERVICE_ACCOUNT_FIELD.finditer(text):
        value = match.group("value")
        if match.group("id"):
            ok = re.fullmatch(r"[0-9a-f]{40}", value) is not None or looks_random(value, min_length=16)
        else:
            ok = not is_placeholder(value) and (value.startswith("-") or looks_random(value, min_length=20))
        if ok:
            found.append(SecretMatch("cloud service account key", match.start("value"), match.end("value")))
    return found


def _web_credentials(text: str) -> list[SecretMatch]:
    found = [SecretMatch("private key", m.start(), m.end()) for m in _PRIVATE_KEY_HEADER.finditer(text)]
    for match in _BEARER.finditer(text):
        if looks_random(match.group(1)):
            found.append(SecretMatch("bearer token", match.start(1), match.end(1)))
    for match in _URL_CREDENTIAL.finditer(text):
        password = match.group(2)
        if not is_placeholder(password) and not password.startswith("$"):
            found.append(SecretMatch("credential in a URL", match.start(2), match.end(2)))
    return found


# A login written as "user / password" under a name for the pair: "the admin login is admin /
# Winter2024!", "credentials: deploy / Tr0ub4dor&3", "user/pass: bob / hunter22".
_LOGIN_PAIR = re.compile(
    r"(?i)\b(?:logins?|log-ins?|sign-ins?|credentials?|creds|user(?:name)?\s*/\s*pass(?:word)?|"
    r"username and password|账号密码|賬號密碼|账户密码)\b"
    r"(?:\s+(?:is|are|was|for\s+(?:the\s+|my\s+|our\s+)?[\w.-]{1,30}\s+(?:is|are)))?"  # "for the NAS is"
    r"(?:\s*[:=]\s*|\s+)(?P<user>[\w.@+-]{1,40})\s*[/|]\s*"
    r"(?P<secret>[^\s/]{6,64}?)(?=[\s,;)]|[.!?]?$|[.!?]\s)"
)


def _login_pairs(text: str) -> list[SecretMatch]:
    """A user name and a password written as a pair under a name for logins, judged as a password
    with nothing but a space to vouch for it (``secret_values.spaced_password``)."""
    return [SecretMatch("password", match.start("secret"), match.end("secret"))
            for match in _LOGIN_PAIR.finditer(text) if spaced_password(match.group("secret"))]


def _command_passwords(text: str) -> list[SecretMatch]:
    found: list[SecretMatch] = []
    for match in _COMMAND_PASSWORD.finditer(text):
        group = "q" if match.group("q") else "bare"
        if not is_placeholder(match.group(group)) and not is_reference(match.group(group)):
            found.append(SecretMatch("password", match.start(group), match.end(group)))
    return found


def _near(text: str, match: re.Match[str], context: re.Pattern[str]) -> bool:
    lo = max(0, match.start() - _CONTEXT_WINDOW)
    return context.search(text, lo, min(len(text), match.end() + _CONTEXT_WINDOW)) is not None


def _is_placeholder_token(token: str) -> bool:
    """A documentation stand-in shaped like a token: ``sk-xxxxxxxx...``, ``ghp_<your token>``."""
    lower = token.lower()
    return "xxxxx" in lower or "*" in lower or "..." in lower or "your" in lower or "<" in lower

# --------------------------------------------------------------------------------------
# Encoded secrets: base64 wrappers and key material without its header
# --------------------------------------------------------------------------------------

_BASE64_BLOB = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{20,}={0,2}")
_BASE64_LINES = re.compile(r"(?m)(?:^[ \t]*[A-Za-z0-9+/]{40,}={0,2}[ \t]*(?:\n|$)){2,}")
_KEY_BODY = re.compile(r"(?<![A-Za-z0-9+/])(?:M[A-Za-z0-9+/]{38,}|b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/]{10,})={0,2}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_MAX_DECODES = 12  # decoded texts scanned per text and level
# Files that are base64 in notes but hold no key: PNG, JPEG, GIF, PDF, zip, gzip.
_BINARY_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGOD", "JVBERi0", "UEsDB", "H4sI")
# ASN.1 prefixes of encrypted PKCS#8 keys (PBES2, PKCS#12 PBE) after the outer SEQUENCE.
_ENCRYPTED_KEY_OIDS = (b"\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x05\x0d", b"\x06\x0a\x2a\x86\x48\x86\xf7\x0d\x01\x0c\x01")


def _encoded_secrets(text: str, runs: list[tuple[int, int]], depth: int) -> list[SecretMatch]:
    found: list[SecretMatch] = []
    for match in _BASE64_LINES.finditer(text):
        blob = "".join(match.group(0).split())
        if _is_key_material(blob, wrapped=True):
            found.append(SecretMatch("private key body", match.start(), match.end()))
        elif depth < 2:  # base64 wrapped at 64 or 76 columns: a secret may straddle the lines
            inner = _decoded_secrets(blob, depth)
            if inner:
                found.append(SecretMatch(f"base64-encoded {inner[0].kind}", match.start(), match.end()))
    decodes = 0
    for start, end in runs:
        for match in _KEY_BODY.finditer(text, start, end):
            if _is_key_material(match.group(0), wrapped=False):
                found.append(SecretMatch("private key body", match.start(), match.end()))
        if depth >= 2:
            continue
        for match in _BASE64_BLOB.finditer(text, start, end):
            decoded = base64_text(match.group(0))  # cheap to reject: most runs are not base64 text
            if decoded is None or decodes >= _MAX_DECODES:
                continue
            decodes += 1  # each decoded text is scanned again: bound the work
            inner = _scan(_normalise(decoded), depth + 1)
            if inner:
                found.append(SecretMatch(f"base64-encoded {inner[0].kind}", match.start(), match.end()))
    return found


def _decoded_secrets(blob: str, depth: int) -> list[SecretMatch]:
    """Secrets in the text ``blob`` decodes to (none when it is binary or not base64)."""
    decoded = base64_text(blob)
    return _scan(_normalise(decoded), depth + 1) if decoded else []


def _is_key_material(blob: str, wrapped: bool) -> bool:
    """Whether base64 ``blob`` is private key material (never a certificate or public key)."""
    if blob.startswith("b3BlbnNzaC1rZXktdjE"):
        return True  # "openssh-key-v1": the OpenSSH private key format
    if blob.startswith(_BINARY_MAGIC) or _HEX.fullmatch(blob):
        return False
    head = decode_base64(blob, limit=64)
    if head is None:
        return False
    der = _der_private_key(head)
    if der is not None:
        return der
    if head[:3] == b"\x00\x00\x00":
        return False  # SSH wire format: public keys (ssh-rsa AAAA...)
    if blob.startswith("MII") and len(blob) >= 100:
        return True  # a DER SEQUENCE of key size that is neither certificate nor public key
    return wrapped and len(blob) >= 120 and base64_text(blob) is None and has_upper_lower_digit(blob)


def _der_private_key(head: bytes) -> bool | None:
    """True for a DER private key, False for other known DER (certificates, public keys), None if not DER."""
    if len(head) < 8 or head[0] != 0x30:
        return None
    size = head[1]
    offset = 2 if size < 0x80 else 2 + (size - 0x80) if size in (0x81, 0x82, 0x83) else 0
    if not offset:
        return None
    body = head[offset:]
    if body[:3] in (b"\x02\x01\x00", b"\x02\x01\x01"):
        return True  # version INTEGER 0 or 1: PKCS#1, PKCS#8, SEC1 EC private keys
    if body[:1] == b"\x30":
        inner = body[1:]
        inner_size = inner[0] if inner else 0
        inner = inner[1 + (inner_size - 0x80 if inner_size >= 0x80 else 0):]
        return inner.startswith(_ENCRYPTED_KEY_OIDS)
    return None


# --------------------------------------------------------------------------------------
# Payment cards
# --------------------------------------------------------------------------------------

# 12-19 digits, each group separated by at most a space, a dot or a dash (with spaces around).
_CARD_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9_.\-/+#])(?<!\d[ .\-])\d(?:(?: ?[.\-] ?| )?\d){11,18}(?![A-Za-z0-9_])(?! ?[.\-/] ?\d)"
)
_NON_DIGITS = re.compile(r"\D+")
# Group sizes as cards are printed: 16 digits in fours, Amex 4-6-5, Diners 4-6-4, 13 to 19 digits.
_CARD_LAYOUTS = frozenset({
    (4, 4, 4, 4), (4, 6, 5), (4, 6, 4), (4, 4, 4, 4, 3), (4, 4, 4, 4, 2), (4, 4, 4, 4, 1), (4, 4, 5),
    (4, 4, 4, 3), (4, 4, 4, 2), (4, 4, 4, 1),
})
_ID_CONTEXT = re.compile(
    r"(?i)(?<![a-z])(?:order|tracking|invoice|ticket|shipment|reference|ref|confirmation|booking|imei|isbn|iban|serial|"
    r"phone|tel|fax|id|no\.|nº|订单|单号|编号|注文番号|電話|电话)\W{0,12}$"
)
_CARD_CONTEXT = re.compile(r"(?i)card|visa|master|amex|carte|karte|tarjeta|cartão|carta|kaart|卡|カード|카드|карт")


def _cards(text: str) -> list[SecretMatch]:
    """Card numbers: issuer prefix and length, Luhn, print layout, and not labelled as an id."""
    found: list[SecretMatch] = []
    for match in _CARD_CANDIDATE.finditer(text):
        candidate = match.group(0)
        groups = tuple(len(g) for g in _NON_DIGITS.split(candidate))
        digits = "".join(ch for ch in candidate if ch.isdigit())
        if len(groups) > 1 and groups not in _CARD_LAYOUTS:
            continue  # grouped, but not as cards are printed (phone numbers, dates, ids)
        if not (_card_issuer_ok(digits) and _luhn_ok(digits) and len(set(digits)) > 1):
            continue
        before = text[max(0, match.start() - 30) : match.start()]
        if _ID_CONTEXT.search(before) and not _CARD_CONTEXT.search(before):
            continue  # an order, tracking or phone number that happens to pass Luhn
        found.append(SecretMatch("payment card number", match.start(), match.end()))
    return found


def _card_issuer_ok(digits: str) -> bool:
    """Whether the number starts like a card of its length (Visa, Mastercard, Amex, ...)."""
    n = len(digits)
    two, four = int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16
    if two in (34, 37):
        return n == 15
    if two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305:
        return 14 <= n <= 19
    if two in (35, 60, 62, 64, 65) or 2200 <= four <= 2204:
        return 16 <= n <= 19
    if two in (50, 56, 57, 58, 63, 67):
        return 16 <= n <= 19  # Maestro (its 12-15 digit cards look like any order number)
    return False


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        value = int(ch)
        if i % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


# --------------------------------------------------------------------------------------
# Normalised view and the public functions
# --------------------------------------------------------------------------------------

_CONTROLS = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")  # in ASCII, all normalise_for_filters changes besides spaces
_SPACES = re.compile(r" {2,}")
_ESCAPE_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def _normalise(text: str) -> str:
    """``normalise_for_filters(text)``, without its per-character loop for ordinary text."""
    if text.isascii():
        if _CONTROLS.search(text):
            return normalise_for_filters(text)
        return _SPACES.sub(" ", text) if "  " in text else text
    folded = unicodedata.normalize("NFKC", text)
    # Printable (no controls, format characters or exotic spaces) means the per-character
    # pass of normalise_for_filters would only squeeze spaces.
    if "\x1b" not in text and folded.replace("\n", "").isprintable() and not DEFAULT_IGNORABLE.search(folded):
        return _SPACES.sub(" ", folded)
    return normalise_for_filters(text)


def _mapped(found: list[SecretMatch], index: list[int] | None) -> list[SecretMatch]:
    """Spans found in a view with characters dropped, as spans of the text the view came from."""
    if index is None:
        return found
    return [SecretMatch(m.kind, index[m.start], index[m.end - 1] + 1) for m in found if m.end > m.start]


def _scan(text: str, depth: int = 0) -> list[SecretMatch]:
    """Every secret in already normalised ``text``; spans index ``text``.

    Names and tokens are also read in the Latin skeleton of the text (``latin_skeleton`` in
    safety/text.py: combining marks dropped, look-alike letters folded to Latin in words that
    read as Latin), so "the pаssword is ..." and "sк-proj-..." are what they look like; and in
    the joined view, where a token broken by a space or a line break is whole again.
    """
    found = [SecretMatch(*hit) for hit in named_values(text)] + _cards(text)
    found += [SecretMatch(*hit) for hit in identity_numbers(text)]
    if "/" in text or "|" in text:
        found += _login_pairs(text)
    if " -p" in text or "curl" in text:
        found += _command_passwords(text)
    tokens, index = latin_skeleton(text)
    if tokens != text:
        found += _mapped([SecretMatch(*hit) for hit in named_values(tokens)], index)
    found += _mapped(_token_secrets(tokens, depth), index)
    if depth == 0:
        joined, joints = _joined_view(tokens)
        if joints is not None:
            inner = [SecretMatch(*hit) for hit in named_values(joined)] + _token_secrets(joined, depth, encoded=False)
            found += _mapped(_mapped(inner, joints), index)
    return found


def _token_secrets(tokens: str, depth: int, encoded: bool = True) -> list[SecretMatch]:
    """Provider tokens, web credentials and (with ``encoded``) base64-wrapped secrets in ``tokens``."""
    found: list[SecretMatch] = []
    runs = [(m.start(), m.end()) for m in _LONG_RUN.finditer(tokens)]
    if runs or "--" in tokens or "://" in tokens:
        found += _web_credentials(tokens)
    if runs:
        found += _provider_tokens(tokens, runs)
        if encoded:
            found += _encoded_secrets(tokens, runs, depth)
    if "private_key" in tokens or "service_account" in tokens:
        found += _service_account_keys(tokens)
    return found


# --------------------------------------------------------------------------------------
# Tokens broken by whitespace
# --------------------------------------------------------------------------------------

# A piece of a token: printable ASCII without spaces. Two pieces separated by whitespace (a
# space, a line break from wrapping or a copy-paste) are joined when the second piece looks
# like the middle or end of a credential: it holds a digit, or flips case inside, or is only
# the "." or "-" that separates the parts of a JSON Web Token. Ordinary words never qualify,
# so "sk-learn is a library" stays three words.
_PIECE = re.compile(r"[!-~]+")
_GAP = re.compile(r"[ \t]*\n?[ \t]*")
_MAX_JOINED = 12  # pieces joined into one: a token is rarely broken more often


_CONTINUATION = re.compile(
    r"[._-]"
    r"|(?=[^0-9]*[0-9])(?=[^A-Za-z]*[A-Za-z])[A-Za-z0-9_\-./+=]+?[.,;:!?)]*"  # letters and digits
    r"|(?=.[^A-Z]*[A-Z])(?=[^a-z]*[a-z])[A-Za-z_\-./+=]{8,}?[.,;:!?)]*"  # case flipping inside
)


def _continues_token(piece: str) -> bool:
    """Whether ``piece`` can be the next part of a broken token (never a word of prose)."""
    return _CONTINUATION.fullmatch(piece) is not None


# How provider tokens start: a piece that starts so may be the head of a broken token.
_TOKEN_PREFIX = re.compile(
    r"(?:sk|rk|pk)[-_]|gh[pousr]_|github_pat_|gl[a-z]{2,5}-|A(?:KIA|SIA|KID|Iza)|LTAI|xox[a-z.]|xapp-|eyJ|ya29\."
    r"|hf_|npm_|SG\.|dckr_|shp[a-z]{2}_|hv[sbr]\.|gls?a?_|pypi-|gsk_|xai-|pplx-|lsv2_|pcsk_|do[opr]_v1_|GOCSPX-"
    r"|dapi|lin_|HRKU-|PMAK-|NR[A-Z]{2}-|figd_|nfp_|rnd_|sntry|sbp?_|tvly-|r8_|ntn_|secret_|whsec_|AGE-SECRET"
    r"|AT(?:ATT|CTT|BB)|pul-|pnu_|bkua_|CFPAT-|EAA|v1\.0-"
)


def _starts_token(piece: str) -> bool:
    """Whether ``piece`` can be the head of a broken token: a provider's prefix, or random-looking itself.

    A random head is what a secret's name is followed by ("api key Abc123Def456 Ghi789...");
    algorithm names and versions ("ssh-ed25519 AAAA...") are not random, so a public key after
    them is left as it is.
    """
    piece = piece.lstrip("\"'`(=:")
    return _TOKEN_PREFIX.match(piece) is not None or looks_random(piece.rstrip("\"'`,;"), min_length=12)


def _joined_view(text: str) -> tuple[str, list[int] | None]:
    """``text`` with the whitespace inside broken tokens removed, and the index of each kept character.

    (text, None) when nothing was joined. Provider formats and named values then read the
    joined view; a secret whose parts were split is found whole.
    """
    if " " not in text and "\n" not in text:
        return text, None
    pieces = list(_PIECE.finditer(text))
    drop: list[tuple[int, int]] = []
    chain = 0
    for left, right in itertools.pairwise(pieces):
        gap = text[left.end():right.start()]
        joinable = (chain < _MAX_JOINED and _continues_token(right.group()) and _GAP.fullmatch(gap) is not None
                    and (chain > 0 or _starts_token(left.group())))
        if joinable:
            drop.append((left.end(), right.start()))
            chain += 1
        else:
            chain = 0
    if not drop:
        return text, None
    keep: list[int] = []
    position = 0
    for start, end in drop:
        keep += range(position, start)
        position = end
    keep += range(position, len(text))
    return "".join(text[i] for i in keep), keep


def find_secrets(text: str) -> list[SecretMatch]:
    """Every credential-looking span in ``text``, by kind, sorted by position.

    Detection reads ``normalise_for_filters(text)`` (fullwidth forms folded, zero-width and
    other invisible characters dropped). Spans index ``text`` itself: each is mapped back
    from the normalised form, and covers the invisible characters inside the secret. In the
    rare case where the two cannot be aligned character by character, spans index
    ``normalise_for_filters(text)`` instead; ``redact_secrets`` handles both.
    """
    spans, _ = _find(text)
    return spans


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))


def redact_secrets(text: str) -> str:
    """``text`` with each secret replaced by ``[redacted <kind>]``.

    The original text is kept around the secrets; when spans cannot be mapped back to it
    (see ``find_secrets``), the normalised text is redacted instead (this is for previews).
    """
    spans, base = _find(text)
    out: list[str] = []
    position = 0
    for match in _merge(spans):
        out.append(base[position : match.start])
        out.append(f"[redacted {match.kind}]")
        position = match.end
    out.append(base[position:])
    return "".join(out)


def _find(text: str) -> tuple[list[SecretMatch], str]:
    """Secrets in ``text`` and the string their spans index (``text`` unless alignment failed)."""
    if not text:
        return [], text
    normalised = _normalise(text)
    found = _scan(normalised) or _decoded_secrets_in_views(text, normalised)
    if not found:
        return [], text
    unique = sorted(set(found), key=lambda m: (m.start, -m.end, m.kind))
    if normalised == text:
        return unique, text
    alignment = _align(text, normalised)
    if alignment is None:
        return unique, normalised
    starts, ends = alignment
    mapped = {SecretMatch(m.kind, starts[m.start], ends[m.end - 1]) for m in unique if m.end > m.start}
    return sorted(mapped, key=lambda m: (m.start, -m.end, m.kind)), text


def _decoded_secrets_in_views(text: str, normalised: str) -> list[SecretMatch]:
    """Secrets that only a decoded view of ``text`` shows (hex, base64 of base64, ``&#116;oken=``...).

    Spans index the normalised text: each covers the encoded run the secret was decoded from,
    so redaction removes the whole encoding.
    """
    views = decoded_views(text, normalised)
    next(views)  # the plain view, already scanned
    for view in views:
        found = _scan(view.text, depth=1)
        if found:
            spans = (view.span(m.start, m.end) for m in found)
            return [SecretMatch(f"encoded {m.kind}", start, end) for m, (start, end) in zip(found, spans, strict=True)]
    return []


def _merge(spans: list[SecretMatch]) -> list[SecretMatch]:
    """Overlapping spans joined, so a redaction never leaves the tail of a secret behind."""
    merged: list[SecretMatch] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = SecretMatch(last.kind, last.start, max(last.end, span.end))
        else:
            merged.append(span)
    return merged


def _fold(chunk: str) -> str:
    """One character (with its combining marks) as ``normalise_for_filters`` writes it."""
    return fold_for_filters(chunk)


def _align(original: str, normalised: str) -> tuple[list[int], list[int]] | None:
    """For each character of ``normalised``, the span of ``original`` it came from.

    Walks both strings: a character (with its combining marks, or with the next one or two
    characters when NFKC composes them) folds to what comes next in the normalised text, or
    was dropped (invisible, escape sequence, squeezed space). None when they disagree.
    """
    starts = [0] * len(normalised)
    ends = [0] * len(normalised)
    i = j = 0
    while i < len(original):
        escape = _ESCAPE_SEQUENCE.match(original, i) if original[i] == "\x1b" else None
        if escape:
            i = escape.end()
            continue
        k = i + 1
        while k < len(original) and unicodedata.combining(original[k]):
            k += 1
        for extra in range(3):  # NFKC may compose across characters (Hangul jamo, ...)
            folded = _fold(original[i : k + extra])
            if folded and normalised.startswith(folded, j):
                k = min(k + extra, len(original))
                for t in range(j, j + len(folded)):
                    starts[t], ends[t] = i, k
                j += len(folded)
                break
        i = k
    return (starts, ends) if j == len(normalised) else None
