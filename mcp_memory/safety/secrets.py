"""Credentials in text on its way into memory.

Memory is plain markdown replayed into future prompts: a key written there leaks to every
later model call and every copy of the folder. Detection is by rules (offline, exact,
testable), grouped by family:

* **Provider tokens**: the documented formats of common providers (OpenAI, Anthropic,
  GitHub, GitLab, AWS, Google, Slack, Stripe, Hugging Face, SendGrid, npm, Discord,
  Telegram, PyPI, Docker Hub, DigitalOcean, Shopify, Mailgun, Mailchimp, Heroku, Vault,
  Doppler, Grafana, Postman, New Relic, Linear, age, Atlassian, Databricks, Notion,
  Supabase, Sentry, Azure and more), JSON Web Tokens, ``Bearer`` values, webhook URLs that
  embed their secret, and ``scheme://user:password@`` URLs. A few formats that are plain
  hex or base64 (Twilio SIDs, AWS secret access keys) count only next to their provider's
  name.
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
* **Encoded secrets**: a base64 blob whose decoded text holds a secret (decoded at most
  twice), and private key material without its ``-----BEGIN`` line: DER private keys
  (``MII...``, recognised by their ASN.1 structure, so certificates and public keys pass),
  OpenSSH private key bodies, and wrapped runs of binary base64 lines.
* **Payment cards**: 13-19 digits, grouped as cards are printed (spaces, dots, dashes, or
  nothing), with an issuer prefix of the right length and a valid Luhn check digit.
* **Others**: passwords on a command line (``mysql -pSecret``, ``sshpass -p``) and wallet
  recovery phrases under their name.

Detection reads ``normalise_for_filters(text)``: NFKC folds fullwidth and other
compatibility forms, zero-width characters, soft hyphens and other invisible format
characters are dropped, whitespace is squeezed. A token split by a zero-width space or
typed in fullwidth letters is found like the plain one. The token rules also read Cyrillic
and Greek look-alike letters and Unicode hyphens as their ASCII twins. Spans are mapped back
onto the original text (see ``find_secrets``).

Speed matters: ``find_secrets`` runs on every stored fact and every captured message. All
patterns are precompiled, none nests quantifiers over the same characters, names are found
with one prefix-factored pattern, and rules that need long tokens run only on the runs of 16
or more printable ASCII characters. An ordinary 300-character note takes about 0.05 ms.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

from mcp_memory.safety.text import decoded_for_filters, normalise_for_filters


@dataclass(frozen=True)
class SecretMatch:
    kind: str
    start: int
    end: int


# --------------------------------------------------------------------------------------
# Provider token formats
# --------------------------------------------------------------------------------------

_B = r"(?<![A-Za-z0-9])"  # a token starts at a boundary (not inside a longer word)
_E = r"(?![A-Za-z0-9])"  # fixed-length tokens end at one

# (kind, pattern) in priority order: at one position the first alternative that matches
# wins, so longer prefixes (sk-ant-) come before shorter ones (sk-). Where the prefix alone is
# distinctive, the length is allowed a few characters either way: hand-made or truncated
# copies of a token are still that token.
_PROVIDER_RULES: tuple[tuple[str, str], ...] = (
    ("Anthropic API key", _B + r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    ("OpenAI API key", _B + r"sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{20,}"),
    ("GitHub token", _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("GitLab token", _B + r"(?:gl(?:pat|dt|rt|ptt|ft|imt|agent|cbt|soat|ffct|oas)-[A-Za-z0-9_\-]{20,}"
                          r"|GR1348941[A-Za-z0-9_\-]{20,})"),
    ("AWS access key", _B + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _E),
    ("Google API key", _B + r"AIza[A-Za-z0-9_\-]{33,40}(?![A-Za-z0-9_\-])"),
    ("Google OAuth token", _B + r"(?:ya29\.[A-Za-z0-9_\-]{20,}|1//0[A-Za-z0-9_\-]{30,})"),
    ("Google OAuth client secret", _B + r"GOCSPX-[A-Za-z0-9_\-]{24,}"),
    ("Slack token", _B + r"(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xoxe\.xox[bp]-[A-Za-z0-9\-]{10,}"
                         r"|xapp-\d-[A-Za-z0-9\-]{10,})"),
    ("Slack webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}"),
    ("Discord webhook", r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d{5,}/[A-Za-z0-9_\-]{30,}"),
    ("Microsoft Teams webhook", r"https://[A-Za-z0-9\-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/\-]{40,}"),
    ("Stripe key", _B + r"(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})"),
    ("Hugging Face token", _B + r"(?:hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,})"),
    ("SendGrid API key", _B + r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}"),
    ("npm token", _B + r"npm_[A-Za-z0-9]{34,40}" + _E),
    ("Discord bot token", r"(?<![A-Za-z0-9_\-])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6,7}\.[A-Za-z0-9_\-]{27,40}"
                          r"(?![A-Za-z0-9_\-])"),
    # Also inside https://api.telegram.org/bot<token>/, hence no letter boundary before it.
    ("Telegram bot token", r"(?<!\d)\d{6,12}:A[A-Za-z0-9_\-]{32,36}(?![A-Za-z0-9_\-])"),
    ("PyPI token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    ("Docker Hub token", _B + r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}"),
    ("DigitalOcean token", _B + r"do[opr]_v1_[a-f0-9]{60,68}"),
    ("Shopify token", _B + r"shp(?:at|ca|pa|ss)_[A-Za-z0-9]{30,36}"),
    ("Mailgun key", _B + r"(?:key-[0-9a-zA-Z]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})" + _E),
    ("Mailchimp API key", _B + r"[0-9a-f]{32}-us\d{1,2}" + _E),
    ("Heroku API key", _B + r"HRKU-[A-Za-z0-9_\-]{40,}"),
    ("HashiCorp Vault token", _B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("Terraform Cloud token", _B + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}"),
    ("Doppler token", _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,44}"),
    ("Grafana token", _B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2}"
                           r"|eyJrIjoi[A-Za-z0-9+/]{40,}={0,2})"),
    ("Postman API key", _B + r"PMAK-[A-Za-z0-9]{20,28}-[A-Za-z0-9]{30,38}"),
    ("New Relic key", _B + r"NR(?:AK|AA|II|JS|SP)-[A-Za-z0-9\-]{19,40}"),
    ("Linear API key", _B + r"lin_(?:api|oauth)_[A-Za-z0-9]{32,48}"),
    ("age secret key", _B + r"AGE-SECRET-KEY-1[0-9A-Z]{50,62}"),
    ("Atlassian API token", _B + r"(?:AT(?:ATT|CTT)3[A-Za-z0-9_\-=]{50,}|ATBB[A-Za-z0-9_=.\-]{28,})"),
    ("Databricks token", _B + r"dapi[a-f0-9]{30,34}(?:-\d)?" + _E),
    ("Notion token", _B + r"(?:ntn_\d{11}[A-Za-z0-9]{32,40}|secret_[A-Za-z0-9]{40,}" + _E + ")"),
    ("Supabase key", _B + r"(?:sbp_(?:oauth_)?[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,})"),
    ("Sentry token", _B + r"sntry[su]_[A-Za-z0-9+/=_\-]{40,}"),
    ("Sentry DSN", r"https?://[0-9a-f]{32}(?::[0-9a-f]{32})?@[A-Za-z0-9.\-]+(?::\d+)?/\d+"),
    ("Azure AD client secret",
     r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"),
    ("Azure storage key", r"(?i:AccountKey|SharedAccessKey|PrimaryKey|SecondaryKey)=[A-Za-z0-9+/]{30,}={0,2}"),
    ("Azure SAS signature", r"(?i:[?&;]sig=)[A-Za-z0-9%+/=]{30,}"),
    ("Groq API key", _B + r"gsk_[A-Za-z0-9]{48,}"),
    ("Replicate token", _B + r"r8_[A-Za-z0-9]{37}" + _E),
    ("Perplexity API key", _B + r"pplx-[A-Za-z0-9]{40,}"),
    ("xAI API key", _B + r"xai-[A-Za-z0-9]{60,}"),
    ("LangSmith key", _B + r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("Pinecone API key", _B + r"pcsk_[A-Za-z0-9_]{40,}"),
    ("Tavily API key", _B + r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{30,}"),
    ("Figma token", _B + r"figd_[A-Za-z0-9_\-]{40,}"),
    ("Netlify token", _B + r"nfp_[A-Za-z0-9]{36}"),
    ("Fly.io token", _B + r"(?:fo1_[A-Za-z0-9_\-]{40,}|fm[12][ar]?_[A-Za-z0-9+/=_\-]{100,})"),
    ("PlanetScale token", _B + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,}"),
    ("Render API key", _B + r"rnd_[A-Za-z0-9]{28,}"),
    ("RubyGems key", _B + r"rubygems_[a-f0-9]{48}"),
    ("NuGet key", _B + r"oy2[a-z0-9]{43}" + _E),
    ("Contentful token", _B + r"CFPAT-[A-Za-z0-9_\-]{43}"),
    ("Pulumi token", _B + r"pul-[a-f0-9]{40}" + _E),
    ("Prefect key", _B + r"pnu_[A-Za-z0-9]{36}"),
    ("Buildkite token", _B + r"bkua_[a-f0-9]{40}"),
    ("Airtable token", _B + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("Square token", _B + r"(?:EAAA[A-Za-z0-9_\-]{60}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,43})"),
    ("Mapbox secret token", _B + r"sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"),
    ("Dynatrace token", _B + r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    ("Alibaba Cloud key", _B + r"LTAI[A-Za-z0-9]{12,20}" + _E),
    ("Shippo token", _B + r"shippo_(?:live|test)_[a-f0-9]{40}"),
    ("Adafruit IO key", _B + r"aio_[A-Za-z0-9]{28}" + _E),
    ("Facebook access token", _B + r"EAA[A-Za-z0-9]{90,}"),
    ("Firebase server key", _B + r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}"),
    ("Dropbox token", _B + r"sl\.[A-Za-z0-9_\-]{130,}"),
    ("JSON Web Token", _B + r"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    ("PuTTY private key", r"PuTTY-User-Key-File-\d+:"),
)
# Rules starting at a plain boundary share one lookbehind outside the alternation: it fails
# at once inside words, which makes the scan several times faster than one per rule.
_BOUNDED = [(kind, body[len(_B):]) for kind, body in _PROVIDER_RULES if body.startswith(_B)]
_UNBOUNDED = [(kind, body) for kind, body in _PROVIDER_RULES if not body.startswith(_B)]
_PROVIDERS = (
    re.compile(_B + "(?:" + "|".join(f"(?P<b{i}>{body})" for i, (_, body) in enumerate(_BOUNDED)) + ")"),
    re.compile("|".join(f"(?P<u{i}>{body})" for i, (_, body) in enumerate(_UNBOUNDED))),
)
_PROVIDER_KINDS = {f"b{i}": kind for i, (kind, _) in enumerate(_BOUNDED)} | {
    f"u{i}": kind for i, (kind, _) in enumerate(_UNBOUNDED)
}

# Token rules need 16+ ASCII characters without a space; most notes have few such runs,
# and CJK sentences (no spaces) have them only around ASCII words.
_LONG_RUN = re.compile(r"[!-~]{16,}")  # printable ASCII: tokens survive NFKC as ASCII
_PRIVATE_KEY_HEADER = re.compile(r"(?<!-)-{3,} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{3,}")
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
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")
_AWS_CONTEXT = re.compile(r"(?i)(?<![a-z])aws|AKIA|ASIA|secret[ _\-]?access")
_CONTEXT_WINDOW = 160


def _provider_tokens(text: str, runs: list[tuple[int, int]]) -> list[SecretMatch]:
    found: list[SecretMatch] = []
    for start, end in runs:
        for pattern in _PROVIDERS:
            for match in pattern.finditer(text, start, end):
                if not _is_placeholder_token(match.group(0)):
                    found.append(SecretMatch(_PROVIDER_KINDS[match.lastgroup or ""], match.start(), match.end()))
        for match in _TWILIO_KEY.finditer(text, start, end):
            if _near(text, match, _TWILIO_CONTEXT):
                found.append(SecretMatch("Twilio key", match.start(), match.end()))
        for match in _AWS_SECRET.finditer(text, start, end):
            token = match.group(0)
            if _has_upper_lower_digit(token) and _near(text, match, _AWS_CONTEXT):
                found.append(SecretMatch("AWS secret access key", match.start(), match.end()))
    return found


def _web_credentials(text: str) -> list[SecretMatch]:
    found = [SecretMatch("private key", m.start(), m.end()) for m in _PRIVATE_KEY_HEADER.finditer(text)]
    for match in _BEARER.finditer(text):
        if _looks_random(match.group(1)):
            found.append(SecretMatch("bearer token", match.start(1), match.end(1)))
    for match in _URL_CREDENTIAL.finditer(text):
        password = match.group(2)
        if not _is_placeholder(password) and not password.startswith("$"):
            found.append(SecretMatch("credential in a URL", match.start(2), match.end(2)))
    return found


def _command_passwords(text: str) -> list[SecretMatch]:
    found: list[SecretMatch] = []
    for match in _COMMAND_PASSWORD.finditer(text):
        group = "q" if match.group("q") else "bare"
        if not _is_placeholder(match.group(group)) and not _is_reference(match.group(group)):
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
# Named values: a name that means secret, a separator, a value
# --------------------------------------------------------------------------------------

def _spellings(*pairs: tuple[str, str]) -> list[str]:
    """``api key``, ``api_key``, ``api-key``, ``api.key``, ``apikey`` for each (first, second) pair."""
    return [first + sep + second for first, second in pairs for sep in (" ", "_", "-", ".", "")]


# Names that mean secret, lowercase, by family. "password" and "pin" accept any value that is
# not prose; "weak" names (pass, pw, clave...) also mean other things, so their value must
# hold a digit; "token" names (keys, tokens, secrets) need a random-looking value; "seed"
# names need twelve to twenty-four words.
_NAME_FAMILIES: dict[str, list[str]] = {
    "password": [
        "password", "passwd", "passphrase", "passcode", "passwort", "kennwort", "wachtwoord", "contraseña",
        "contrasena", "senha", "mot de passe", "parola d'ordine", "lösenord", "losenord", "passord",
        "adgangskode", "hasło", "haslo", "heslo", "jelszó", "şifre", "пароль", "парол", "パスワード",
        "パスコード", "비밀번호", "패스워드", "비번", "암호", "密码", "密碼", "口令", "recovery code",
        "recovery codes", "backup code", "backup codes", "code de récupération", "codes de récupération",
        "wiederherstellungscode", "wiederherstellungscodes", "código de recuperación", "恢复码", "备用码",
        "リカバリーコード", "復旧コード", "wifi key", "wi-fi key", "wifi code", "code wifi", "code wi-fi",
        "clé wifi", "clé wi-fi", "wlan-schlüssel", "wlan schlüssel", "wlan-key", "wpa key", "wpa2 key",
        "network key", "netzwerkschlüssel", "wifi pass", "wifi pw",
    ],
    "pin": [
        "pin", "pin code", "pin-code", "pincode", "pin码", "pin 码", "pin-код", "пин-код", "пин код", "code pin",
        "geheimzahl", "暗証番号", "cvv", "cvv2", "cvc", "cvc2",
    ],
    "weak": ["pwd", "pw", "pass", "mdp", "clave", "sifre"],
    "seed": [
        "mnemonic", "seed phrase", "recovery phrase", "secret recovery phrase", "seed words", "助记词", "助記詞",
        "シードフレーズ", "phrase de récupération", "wiederherstellungsphrase", "frase de recuperación",
    ],
    "token": [
        "secret", "token", "credential", "credentials", "creds", "authorization", "auth", "key", "clé",
        "clé d'api", "clé api", "clé secrète", "clé privée", "clé d'accès", "jeton", "jeton d'accès",
        "schlüssel", "clave de api", "clave secreta", "clave privada", "clave de acceso", "chave",
        "chave de api", "chave secreta", "chave privada", "chave de acesso", "chiave", "chiave api",
        "chiave segreta", "chiave privata", "chiave di accesso", "sleutel", "ключ", "ключ api",
        "ключ доступа", "токен", "секрет", "apiキー", "api キー", "アクセスキー", "シークレット",
        "シークレットキー", "トークン", "秘密鍵", "api키", "api 키", "액세스 키", "액세스키", "비밀 키", "비밀키",
        "토큰", "시크릿", "api密钥", "api 密钥", "密钥", "秘钥", "密鑰", "私钥", "访问令牌", "令牌",
        *_spellings(
            ("api", "key"), ("api", "token"), ("api", "secret"), ("access", "key"), ("access", "token"),
            ("client", "secret"), ("private", "key"), ("signing", "key"), ("session", "key"),
            ("session", "token"), ("session", "secret"), ("encryption", "key"), ("master", "key"),
            ("refresh", "token"), ("auth", "token"),
        ),
    ],
}
_NAME_FAMILY = {name: family for family, names in _NAME_FAMILIES.items() for name in names}


_Trie: TypeAlias = dict[str, "_Trie"]  # a prefix tree: one key per next character, "" where a word ends


def _trie_pattern(words: list[str]) -> str:
    """One regex for many literals, factored by common prefixes.

    A flat alternation of a hundred names costs a hundred tries at every position; the trie
    costs one or two, which is most of the time ``find_secrets`` spends on an ordinary note.
    Longer names win (``password`` over ``pass``) because each optional tail is greedy.
    """
    trie: _Trie = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: _Trie) -> str:
        alternatives = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


# Matched on the lowercased text (same offsets; see _lower), case-sensitively: faster than IGNORECASE.
_NAME_KEYWORDS = re.compile(_trie_pattern(list(_NAME_FAMILY)))
_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
_NAME_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

_PASSWORD_PARTS = frozenset({
    "password", "passwd", "passphrase", "passcode", "passwort", "kennwort", "wachtwoord", "senha",
    "contrasena", "motdepasse", "losenord", "passord", "adgangskode", "haslo", "heslo",
})
_PASSWORD_SUFFIXES = ("password", "passwd", "passwort", "kennwort", "passphrase", "wachtwoord")
_WEAK_PARTS = frozenset({"pwd", "pw", "pass", "mdp", "clave", "sifre"})
_PIN_PARTS = frozenset({"pin", "pincode", "cvv", "cvc", "cvv2", "cvc2"})
_TOKEN_PARTS = frozenset({
    "secret", "secrets", "token", "credential", "credentials", "creds", "apikey", "apitoken", "apisecret",
    "accesstoken", "authtoken", "accesskey", "secretkey", "privatekey", "signingkey", "sessionkey",
    "masterkey", "authkey", "clientsecret", "auth", "authorization", "sig", "sas", "bearer",
})
_TOKEN_SUFFIXES = ("secret", "token", "apikey", "secretkey", "accesskey", "privatekey")
_KEY_PARTS = frozenset({"key", "keys"})
# Names holding one of these are about something else: public keys, database and cache
# keys, pagination tokens, counts of model tokens.
_EXCLUDED_PARTS = frozenset({
    "public", "publishable", "pub", "idempotency", "sort", "partition", "cache", "foreign", "row", "range",
    "routing", "shard", "lookup", "dedup", "dedupe", "cursor", "page", "pagination", "continuation", "next",
    "i18n", "translation", "message", "trace", "correlation", "request", "object", "bucket", "map", "dict",
    "hot", "keyboard", "shortcut", "music", "tokens", "max", "min", "num", "csrf",
})
# The word before "key" / "token" in a sentence that makes it something else.
_NOT_SECRET_BEFORE = _EXCLUDED_PARTS | {"primary", "composite", "unique", "gpg", "pgp", "ssh", "host"}
# A last part that makes the name describe the secret rather than hold it.
_NON_SECRET_SUFFIXES = frozenset({
    "id", "ids", "arn", "url", "uri", "urls", "endpoint", "host", "hostname", "port", "path", "paths", "file",
    "files", "filename", "dir", "directory", "folder", "name", "names", "type", "types", "kind", "length", "len",
    "size", "ttl", "expiry", "expires", "expiration", "expire", "lifetime", "age", "timeout", "header", "headers",
    "policy", "policies", "env", "var", "variable", "prefix", "suffix", "format", "mode", "method", "methods",
    "count", "limit", "limits", "rate", "version", "algorithm", "alg", "algo", "hash", "hashed", "salt", "rounds",
    "iterations", "cost", "enabled", "enable", "disabled", "required", "field", "fields", "param", "label",
    "placeholder", "hint", "provider", "store", "manager", "location", "source", "backend", "scope", "scopes",
    "audience", "issuer", "usage", "region", "user", "username", "login", "email", "owner", "ref", "mount", "role",
    "group", "regex", "pattern", "schema", "validator", "strength", "complexity", "reset", "rotation", "rotate",
    "vault", "at", "on", "date", "time", "timestamp", "created", "updated", "last", "changed", "bucket",
    "counter", "budget", "refresh", "storage", "template", "help", "text", "title", "description", "docs",
    "rule", "rules", "check", "checks", "strategy", "service", "server", "client", "command", "cmd",
    "input", "prompt", "dialog", "screen", "page", "form", "button", "link", "flow",
})
_PREPOSITIONS = (
    "for|of|on|to|at|in|from|with|du|de|des|pour|für|fur|zum|zur|vom|von|del|para|per|voor|van|do|da|dos|das"
    "|di|della|dello|от|для|к|на"
)
_PREPOSITION_WORDS = frozenset(_PREPOSITIONS.split("|"))
_PROSE_VERBS = (
    r"is\s+now|is\s+set\s+to|is\s+still|is|was|are|(?:will|shall|should|would|must)\s+be|has\s+been|set\s+to"
    r"|changed\s+to|to|becomes|est|était|c'est|ist|lautet|war|es|era|é|è"
    r"|är|er|jest|это|будет|был|была"
)
_CJK_VERBS = (
    r"(?:一直|现在|現在|还|還|都|也|已经|已經|就|应该|應該|其实|其實|仍然|依然|统一|統一|默认|默認|目前|暂时|暫時)?"
    r"(?:是|为|為|改成|改为|改為|设为|设置为|設為|设成|換成|换成)|は|を|が|는|은|이|가"
)
# After a name: an optional qualifier ("for the wifi", "Netflix", "der SIM-Karte", "(prod)"), a
# separator, then the value, quoted or bare. The qualifier is bounded (40 characters, or
# three words) and its characters exclude the separators that follow it.
# Separators: assignments (``=``, ``:=``, ``=>``, ``<password>x``, ``define('DB_PASSWORD', 'x')``),
# a colon, a dash, a verb in a sentence ("is", "lautet", "是", "は"), or a space.
_VALUE_TAIL = re.compile(
    r"""["']?"""
    r"(?:(?P<qual>\s+(?:" + _PREPOSITIONS + r")\s+(?:[^\n.:=]|\.(?=\S)){1,40}?"
    r"|(?:\s+[^\s:=,.!?\"'()]{1,24}){1,3}?|\s*\([^()\n]{1,40}\))?"
    r"""(?:(?P<assign>\s*(?::=|=>|->|=|>)\s*|(?<=["'])\s*,\s*(?=["']))|(?P<colon>\s*:\s*)|(?P<dash>\s+[-—–]\s+|\s*[—–]\s*)"""
    r"|(?P<prose>\s+(?:" + _PROSE_VERBS + r")\s+|\s*,\s*(?:c'est|это|it's|that's|es|ist)\s+"
    r"|\s*(?:" + _CJK_VERBS + r")\s*))"
    r"|(?P<space>[ \t]+|(?<=[^\x00-\x7f])))"
    r"(?:(?P<scheme>bearer|basic|token|digest|apikey|sso-key)\s+)?"
    r"""(?:(?P<quote>["'`“‘«「『])(?P<quoted>[^"'`”’»」』\n]{1,120})["'`”’»」』]"""
    r"""|(?P<bare>[^\s"'`“”‘’«»「」『』<>()\[\]{},;]{1,200}))""",
    re.IGNORECASE,
)
# Flags such as --password take their value after a space.
_FLAG_TAIL = re.compile(
    r"""(?:[ \t]+|=)(?:(?P<quote>["'])(?P<quoted>[^"'\n]{1,120})["']|(?P<bare>[^\s"'`<>()\[\]{},;]{1,200}))"""
)
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_INFLECTION = re.compile(r"[a-zà-ÿа-яё]{0,3}", re.IGNORECASE)  # case and plural endings after a name
_LAST_WORD = re.compile(r"([a-z0-9]+)[ _\-]$")
# A wallet recovery phrase: twelve to twenty-four short lowercase words.
_SEED_PHRASE = re.compile(r"""["']?\s*(?::|=|\s+is|\s+are)?\s*["']?((?:[a-z]{3,8}[ ,]+){11,23}[a-z]{3,8})""")


class _Tail(NamedTuple):
    value: str
    start: int
    end: int
    separator: str  # assign | colon | prose | space
    quoted: bool
    line_final: bool
    qualified: bool  # words stood between the name and the separator


def _named_values(text: str) -> list[SecretMatch]:
    found: list[SecretMatch] = []
    name_end = 0  # end of the last identifier read: later hits inside it are the same name
    lowered = _lower(text)
    for match in _NAME_KEYWORDS.finditer(lowered):
        start, end = match.start(), match.end()
        keyword = match.group(0)
        family = _NAME_FAMILY.get(keyword, "")
        if keyword == "암호" and lowered.startswith("화", end):
            continue  # 암호화: encryption, not a password
        if keyword.isascii():
            if start < name_end:
                continue
            start, end = _expand_identifier(text, start, end)
            name_end = end
            if _inside_path(text, start, end):
                continue
            name = lowered[start:end]
            if name != keyword or family in ("token", "weak", "seed"):
                family = _name_family(text[start:end]) or ""
        elif not _CJK.match(keyword[-1]):  # CJK names take no endings: "密码Lp0@9x" is name + value
            inflection = _INFLECTION.match(text, end)  # lösenordet, пароля, contraseñas
            end = inflection.end() if inflection else end
        if not family:
            continue
        if family in ("token", "key") and _previous_word(lowered, start) in _NOT_SECRET_BEFORE:
            continue  # "cache key: ...", "primary key 550e8400-...", "page token: ..."
        if family == "seed":
            phrase = _SEED_PHRASE.match(text, end)
            if phrase:
                found.append(SecretMatch("recovery phrase", phrase.start(1), phrase.end(1)))
            continue
        flag = text.startswith("-", start) and not text.startswith("-", end)
        tail = _value_after(text, end, flag)
        if tail is None or not _value_fits(family, tail, keyword):
            continue
        kind = {"password": "password", "weak": "password", "pin": "PIN"}.get(family, "secret assignment")
        found.append(SecretMatch(kind, tail.start, tail.end))
    return found


def _previous_word(lowered: str, start: int) -> str:
    match = _LAST_WORD.search(lowered, max(0, start - 24), start)
    return match.group(1) if match else ""


def _inside_path(text: str, start: int, end: int) -> bool:
    """A segment of a path or an ARN (``/run/secrets/db``, ``arn:...:secret:prod/db``), not a name."""
    before, after = text[start - 1 : start], text[end : end + 1]
    return before in (":", "/") and after in (":", "/")


def _lower(text: str) -> str:
    """``text.lower()`` with the same offsets (U+0130 is the one character that lowers to two)."""
    return text.replace("\u0130", "i").lower()


def _expand_identifier(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole identifier around a keyword hit: ``DB_PASSWORD``, ``X-Api-Key``, ``apiKey``."""
    while start > 0 and text[start - 1] in _IDENT_CHARS:
        start -= 1
    while end < len(text) and text[end] in _IDENT_CHARS:
        end += 1
    while end > start and text[end - 1] in ".-":
        end -= 1  # sentence punctuation, not part of the name
    while start < end and text[start] == ".":
        start += 1
    return start, end


def _name_family(name: str) -> str | None:
    """What an identifier names: "password", "weak", "pin", "token", "key" (bare), "seed" or nothing.

    The keyword is looked for as a part of the name (split on ``_ - .`` and camelCase), not
    after a word boundary: ``\\b`` does not hold between ``_`` and a letter, which is how
    ``NAME_SECRET=...`` used to slip through.
    """
    parts = [p.lower() for p in _NAME_PARTS.findall(name)]
    while parts and parts[-1].isdigit():
        parts.pop()
    if not parts or _EXCLUDED_PARTS.intersection(parts):
        return None
    if len(parts) > 1 and parts[-1] in _NON_SECRET_SUFFIXES:
        return None
    if _PASSWORD_PARTS.intersection(parts) or any(p.endswith(_PASSWORD_SUFFIXES) for p in parts):
        return "password"
    if _PIN_PARTS.intersection(parts):
        return "pin"
    if _TOKEN_PARTS.intersection(parts) or any(p.endswith(_TOKEN_SUFFIXES) for p in parts):
        return "token"
    if _KEY_PARTS.intersection(parts):
        return "token" if len(parts) > 1 else "key"
    if _WEAK_PARTS.intersection(parts):
        return "weak"
    if "mnemonic" in parts or {"seed", "phrase"} <= set(parts):
        return "seed"
    return None


def _value_after(text: str, pos: int, flag: bool) -> _Tail | None:
    match = (_FLAG_TAIL if flag else _VALUE_TAIL).match(text, pos)
    if match is None:
        return None
    quoted = match.group("quoted") is not None
    group = "quoted" if quoted else "bare"
    value, start, end = match.group(group), match.start(group), match.end(group)
    if not quoted:
        cjk = _CJK.search(value)
        if cjk:  # a value typed without a space before the rest of a CJK sentence
            value = value[: cjk.start()]
        value = value.rstrip(".,;:。、")  # sentence punctuation after the value
        end = start + len(value)
    if not value:
        return None
    if flag:
        separator = "assign"
    else:
        separator = next(g for g in ("assign", "colon", "dash", "prose", "space") if match.group(g) is not None)
        separator = "prose" if separator == "dash" else separator
    rest = text[end : end + 80].split("\n", 1)[0]  # bounded: many names in one text stay linear
    line_final = not rest.strip() or rest.lstrip().startswith("#")
    if rest[:1] in ("(", "["):
        return None  # a call or an index: os.getenv("X"), env["X"]
    qualifier = None if flag else match.group("qual")
    if qualifier and _describes_secret(qualifier):
        return None  # "API key ID: ...", "token type: bearer", "password length: 16"
    qualified = qualifier is not None
    return _Tail(value, start, end, separator, quoted, line_final, qualified)


def _describes_secret(qualifier: str) -> bool:
    """Whether the words after a name make it a property of the secret (its id, type, length)."""
    words = qualifier.lower().strip(" ()").split()
    if not words or words[0] in _PREPOSITION_WORDS:
        return False
    return any(word in _NON_SECRET_SUFFIXES or word in _EXCLUDED_PARTS for word in words)


def _value_fits(family: str, tail: _Tail, keyword: str) -> bool:
    value = tail.value
    if _is_placeholder(value) or _is_reference(value):
        return False
    if family == "pin":  # a card's CVV has three or four digits, a PIN four to eight
        low = 3 if keyword.startswith("cv") else 4
        return value.isdigit() and low <= len(value) <= 8 and len(set(value)) > 1
    if family in ("token", "key"):
        if tail.separator == "space":  # "auth token 7f9a...": only a long random value, never after a bare "key"
            return family == "token" and _looks_random(value, min_length=20) and any(ch.isdigit() for ch in value)
        return _looks_random(value, min_length=16 if family == "key" else 12)
    if family == "weak":  # "pw Lx82!mq" but not "pass the salt": letters and digits together
        return _password_ok(value, "space", tail.quoted, False)
    return _password_ok(value, tail.separator, tail.quoted, tail.line_final and not tail.qualified)


# Words that follow "password:" / "password is" in notes about passwords, not in leaks.
_NOT_PASSWORDS = frozenset({
    "required", "optional", "none", "null", "nil", "empty", "blank", "hidden", "masked", "secret", "redacted",
    "removed", "unset", "set", "same", "unchanged", "changed", "updated", "reset", "expired", "invalid",
    "incorrect", "wrong", "correct", "valid", "weak", "strong", "ok", "yes", "no", "true", "false", "on", "off",
    "enabled", "disabled", "string", "str", "text", "int", "integer", "number", "bool", "boolean", "varchar",
    "char", "bytes", "hashed", "encrypted", "plaintext", "cleartext", "see", "below", "above", "ask", "tbd",
    "todo", "pending", "unknown", "inherit", "inherited", "default", "env", "environment", "vault", "keychain",
    "keyring", "prompt", "interactive", "stdin", "file", "manual", "auto", "random", "generated", "sso",
    "oauth", "oauth2", "ldap", "saml", "kerberos", "bcrypt", "argon2", "argon2id", "scrypt", "pbkdf2", "sha256",
    "sha512", "sha1", "md5", "base64", "utf-8", "1password", "bitwarden", "lastpass", "keepass", "mandatory",
    "obligatoire", "requis", "erforderlich", "pflicht", "leer", "requerido", "obligatorio", "vacío", "vacio",
    "obrigatória", "obrigatorio", "verplicht", "sensitive", "protected", "locked", "unlocked", "rotated",
    "stored", "saved", "managed", "shared", "needed", "missing", "forgotten", "oublié", "vergessen", "olvidada",
    "correcte", "falsch", "richtig", "abgelaufen", "expiré", "expirée", "caducada", "expirada",
})


def _password_ok(value: str, separator: str, quoted: bool, line_final: bool) -> bool:
    """A value stated as a password: anything that is not a word of prose."""
    core = value.rstrip("!?")  # "is it hunter2?" and "vergessen?" end in punctuation, not in the value
    if len(core) < 4 or core.lower() in _NOT_PASSWORDS or _is_version_or_date(core):
        return False
    letters = sum(ch.isalpha() for ch in core)
    digits = sum(ch.isdigit() for ch in core)
    if letters == len(core):  # one word: a password only when nothing says it is prose
        if _mixed_case_inside(core) and not _CAMEL_WORDS.fullmatch(core):
            return len(core) >= 8 or separator != "space"  # case flipping at random: oLONHhkfCyez
        if separator == "space":
            return False
        if quoted or _mixed_case_inside(core):
            return True
        return separator in ("assign", "colon") and line_final and len(core) >= 6
    if digits == len(core):
        return len(core) >= (6 if separator == "space" else 4)
    if separator == "space":
        return len(core) >= 6 and letters > 0 and digits > 0
    return True


def _mixed_case_inside(value: str) -> bool:
    return any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)


# --------------------------------------------------------------------------------------
# What a value is: placeholder, reference, or a random-looking credential
# --------------------------------------------------------------------------------------

_PLACEHOLDER_MARKERS = (
    "xxxx", "****", "•••", "...", "…", "your", "example", "sample", "placeholder", "changeme", "change_me",
    "change-me", "replace", "redacted", "dummy", "insert", "fixme", "<", ">", "{{", "}}", "${", "$(", "%(",
)
_PLACEHOLDER_WORDS = frozenset({
    "password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "key", "value",
    "none", "null", "nil", "undefined", "empty", "n/a", "na", "tbd", "todo", "unset", "hidden", "masked",
    "test", "demo", "foo", "bar", "baz", "foobar", "string", "abc",
})
_REFERENCE_PREFIXES = (
    "env:", "env.", "vault:", "op://", "arn:", "secretsmanager:", "ssm:", "projects/", "!vault", "!ref", "!sub",
    "!secret", "!env", "!getatt", "sops:", "azurekeyvault", "keyvault:", "$env:", "process.env", "os.environ",
    "os.getenv", "getenv", "settings.", "config.", "secrets.", "env[",
)
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_]+(?:\.[A-Za-z_]+)+")
_ENV_NAME = re.compile(r"\$?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_NESTED_SETTING = re.compile(r"[A-Za-z_]\w*=[^=]")  # "password: min_length=12" describes, base64 ends in "="
_SHELL_VARIABLE = re.compile(r"[$%][A-Za-z_{(]")
_PATH = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\)")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
_FILE_NAME = re.compile(
    r"[\w.\-]+\.(?:json|ya?ml|toml|ini|env|txt|pem|key|crt|cer|p12|pfx|cfg|conf|xml|properties|gpg|asc|age|enc|py|js|ts|sh)",
    re.IGNORECASE,
)
_VERSION_OR_DATE = re.compile(
    r"v?\d+(?:\.\d+){1,3}(?:[\-+][\w.]+)?|\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?"
    r"|\d{1,2}[/.\-]\d{1,2}[/.\-]\d{2,4}|\d{1,2}:\d{2}(?::\d{2})?"
)
# One word of an identifier: "prod", "Prod", "API". Each alternative must take a whole run of
# its letters (the lookaheads), so a string splits into words one way only: no backtracking
# blow-up on long letter runs.
_WORD = r"(?:[a-z]{2,}(?![a-z])|[A-Z][a-z]+(?![a-z])|[A-Z]{2,}(?![A-Za-z]))"
_CAMEL_WORDS = re.compile(_WORD + "+")  # camelCase / TitleCase words: ProdBackendService
_WORD_PART = _WORD + r"+\d{0,4}|\d{1,4}"
_WORDS = re.compile(rf"(?:{_WORD_PART})(?:[\-_./: ](?:{_WORD_PART}))*")  # my-service-name, SAML2-Okta-Prod-2025


def _is_placeholder(value: str) -> bool:
    """A stand-in that documentation or a template uses where a secret goes."""
    lower = value.lower()
    if lower in _PLACEHOLDER_WORDS or len(set(lower)) <= 2:
        return True
    return any(marker in lower for marker in _PLACEHOLDER_MARKERS)


def _is_reference(value: str) -> bool:
    """A pointer to a secret kept elsewhere (variable, setting, path, URL), not the secret."""
    lower = value.lower()
    if lower.startswith(_REFERENCE_PREFIXES) or _SHELL_VARIABLE.match(value) or _PATH.match(value):
        return True
    if _URL.match(value) or _EMAIL.fullmatch(value) or _FILE_NAME.fullmatch(value):
        return True
    return bool(_DOTTED_IDENTIFIER.fullmatch(value) or _ENV_NAME.fullmatch(value) or _NESTED_SETTING.match(value))


def _is_version_or_date(value: str) -> bool:
    return _VERSION_OR_DATE.fullmatch(value) is not None


def _looks_random(value: str, min_length: int = 12) -> bool:
    """Whether ``value`` reads like generated credential material rather than words or numbers."""
    if len(value) < min_length or _is_placeholder(value) or _is_reference(value) or _is_version_or_date(value):
        return False
    if len(set(value)) < min(10, len(value) // 2):
        return False  # aaaaaaaa1111 and other low-variety strings
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    if _WORDS.fullmatch(value):
        return False  # my-service-name, prod/db/2024, snake_case_words, ProdBackendToken2025
    if has_digit and has_alpha:
        return True
    if not has_digit:  # letters (and symbols) only: random when the case flips a lot
        return len(value) >= 20 and _mixed_case_inside(value) and not _CAMEL_WORDS.fullmatch(value)
    return len(value) >= 24  # long numeric secrets exist; short numbers are counts and ids


def _has_upper_lower_digit(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)


# --------------------------------------------------------------------------------------
# Encoded secrets: base64 wrappers and key material without its header
# --------------------------------------------------------------------------------------

_BASE64_BLOB = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{20,}={0,2}")
_BASE64_LINES = re.compile(r"(?m)(?:^[ \t]*[A-Za-z0-9+/]{40,}={0,2}[ \t]*(?:\n|$)){2,}")
_KEY_BODY = re.compile(r"(?<![A-Za-z0-9+/])(?:M[A-Za-z0-9+/]{38,}|b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/]{10,})={0,2}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_MAX_DECODES = 12  # decoded texts scanned per text and level
_MAX_BLOB = 8192  # base64 characters decoded per blob
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
            decoded = _decode_text(match.group(0))  # cheap to reject: most runs are not base64 text
            if decoded is None or decodes >= _MAX_DECODES:
                continue
            decodes += 1  # each decoded text is scanned again: bound the work
            inner = _scan(_normalise(decoded), depth + 1)
            if inner:
                found.append(SecretMatch(f"base64-encoded {inner[0].kind}", match.start(), match.end()))
    return found


def _decoded_secrets(blob: str, depth: int) -> list[SecretMatch]:
    """Secrets in the text ``blob`` decodes to (none when it is binary or not base64)."""
    decoded = _decode_text(blob)
    return _scan(_normalise(decoded), depth + 1) if decoded else []


def _decode_base64(blob: str, limit: int | None = None) -> bytes | None:
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


def _decode_text(blob: str) -> str | None:
    """The UTF-8 text a base64 blob decodes to, or None for binary or no base64 at all."""
    if blob.isalpha() or blob.isdigit() or not (any(c.isdigit() for c in blob) or "=" in blob or "+" in blob):
        return None  # a long word or number, not an encoding
    raw = _decode_base64(blob)
    if raw is None or len(raw) < 12:
        return None
    decoded = None
    for cut in range(4):  # a truncated blob may end inside a multi-byte character
        try:
            decoded = raw[: len(raw) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    if decoded is None:
        return None
    printable = sum(ch.isprintable() or ch in "\n\t\r" for ch in decoded)
    return decoded if printable >= 0.95 * len(decoded) else None


def _is_key_material(blob: str, wrapped: bool) -> bool:
    """Whether base64 ``blob`` is private key material (never a certificate or public key)."""
    if blob.startswith("b3BlbnNzaC1rZXktdjE"):
        return True  # "openssh-key-v1": the OpenSSH private key format
    if blob.startswith(_BINARY_MAGIC) or _HEX.fullmatch(blob):
        return False
    head = _decode_base64(blob, limit=64)
    if head is None:
        return False
    der = _der_private_key(head)
    if der is not None:
        return der
    if head[:3] == b"\x00\x00\x00":
        return False  # SSH wire format: public keys (ssh-rsa AAAA...)
    if blob.startswith("MII") and len(blob) >= 100:
        return True  # a DER SEQUENCE of key size that is neither certificate nor public key
    return wrapped and len(blob) >= 120 and _decode_text(blob) is None and _has_upper_lower_digit(blob)


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
    if "\x1b" not in text and folded.replace("\n", "").isprintable():
        return _SPACES.sub(" ", folded)
    return normalise_for_filters(text)


# Letters that look Latin in other scripts, and dashes that look like "-". NFKC keeps them
# apart, so "ѕk‐proj-..." (Cyrillic ѕ, U+2010 hyphen) would pass the token rules. Folded one
# for one (offsets unchanged), and only for the token rules: names in Cyrillic or Greek
# must keep their letters.
_LOOKALIKES = str.maketrans(
    "аеорсухѕіјԁԛԝһӏАВЕКМНОРСТХУЅІЈοαενρτυχκιΑΒΕΖΗΙΚΜΝΟΡΤΥΧ‐‑‒–−﹣",
    "aeopcyxsijdqwhlABEKMHOPCTXYSIJoaevptuxkiABEZHIKMNOPTYX------",
)


def _scan(text: str, depth: int = 0) -> list[SecretMatch]:
    """Every secret in already normalised ``text``; spans index ``text``."""
    found = _named_values(text) + _cards(text)
    if " -p" in text or "curl" in text:
        found += _command_passwords(text)
    tokens = text if text.isascii() else text.translate(_LOOKALIKES)
    runs = [(m.start(), m.end()) for m in _LONG_RUN.finditer(tokens)]
    if runs or "-----" in tokens or "://" in tokens:
        found += _web_credentials(tokens)
    if runs:
        found += _provider_tokens(tokens, runs) + _encoded_secrets(tokens, runs, depth)
    return found


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
    found = _scan(normalised)
    if ("&" in normalised or "%" in normalised) and not found:
        # Encoded on the way in (``&#116;oken=``, ``%74oken=``): found in the decoded view, whose
        # spans cannot index ``text``, so the decoded text is what gets redacted.
        decoded = decoded_for_filters(text)
        if decoded != normalised:
            found = _scan(decoded)
            if found:
                return sorted(set(found), key=lambda m: (m.start, -m.end, m.kind)), decoded
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
    out = []
    for ch in unicodedata.normalize("NFKC", chunk):
        if ch == "\n":
            out.append(ch)
        elif ch.isspace():
            out.append(" ")
        elif unicodedata.category(ch) not in ("Cc", "Cf"):
            out.append(ch)
    return "".join(out)


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
