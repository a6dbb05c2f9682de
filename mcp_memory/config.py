"""Settings: documented defaults, overridden by a TOML file, then the environment, then flags.

Every setting lives in one of the dataclasses below. docs/configuration.md lists the same
names and defaults; ``mcp-memory status`` prints the values in effect.

Sources, lowest precedence first:

1. the defaults in this file;
2. ``mcp-memory.toml`` in the workspace, or the file given with ``--config``;
3. environment variables ``MCP_MEMORY_<SECTION>_<KEY>`` (``MCP_MEMORY_SEARCH_MAX_RESULTS=10``);
4. command-line flags (the CLI passes them as ``overrides``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_FILENAME = "mcp-memory.toml"
INDEX_DIRNAME = ".mcp-memory"
# URI schemes index_path may name: a vector table on object storage that machines share (LanceDB's
# spelling of each store; s3+ddb commits through a DynamoDB table).
OBJECT_STORE_SCHEMES = ("s3", "s3+ddb", "gs", "az", "abfs", "abfss")


class ConfigError(ValueError):
    """A setting has a wrong name, type or value."""


@dataclass
class EmbeddingSettings:
    # "local" (USE-multilingual v3, offline, numpy only), "e5" (multilingual-e5-small, offline),
    # "openai" (any OpenAI-compatible endpoint) or "none" (keyword search only).
    provider: str = "local"
    model: str = ""  # empty: the provider's default model
    base_url: str = ""  # openai: e.g. http://localhost:11434/v1 for Ollama
    api_key: str = ""  # openai: falls back to $OPENAI_API_KEY
    dimensions: int = 0  # openai: 0 = the model's native size
    batch_size: int = 32
    max_retries: int = 5
    timeout: float = 60.0
    threads: int = 0  # local models: 0 = all cores


@dataclass
class ChunkingSettings:
    tokens: int = 400
    overlap: int = 80


@dataclass
class SearchSettings:
    max_results: int = 6
    min_score: float = 0.0
    candidate_multiplier: int = 4
    vector_weight: float = 0.3
    text_weight: float = 0.7
    # Off by default: a 30-day half-life makes a relevant note from last year unfindable, which
    # is wrong for a long-term memory (see docs/benchmarks.md). Turn on to favour recent notes.
    decay_enabled: bool = False
    half_life_days: float = 30.0
    mmr_enabled: bool = True
    mmr_lambda: float = 0.7
    snippet_chars: int = 700
    # A hit from a longer chunk cites at most this many lines around the line that matched
    # (chunk_start_line/chunk_end_line keep the chunk's own range; memory_get widens).
    citation_lines: int = 12


@dataclass
class CaptureSettings:
    # A new memory this similar (cosine of embeddings, or exact text up to case, spacing and
    # punctuation) to an existing line is not written again.
    dedupe_threshold: float = 0.95
    max_messages: int = 10  # auto-capture reads this many of the latest messages
    min_chars: int = 10  # shorter messages are not captured (a CJK character counts as two)
    max_chars: int = 600  # longer messages are not captured (pasted text, not a statement)
    max_facts: int = 10  # at most this many memories from one capture
    # Who turns messages into facts: "auto" (chat model if configured, else the client's model
    # through MCP sampling when it offers it, else rules), "rules", "llm", "sampling".
    extractor: str = "auto"
    llm_model: str = ""  # an OpenAI-compatible chat model, e.g. gpt-4.1-mini or llama3.1
    llm_base_url: str = ""  # e.g. http://localhost:11434/v1 for Ollama; empty: api.openai.com
    llm_api_key: str = ""  # falls back to $OPENAI_API_KEY
    llm_timeout: float = 30.0


@dataclass
class RecallSettings:
    min_prompt_chars: int = 5  # shorter prompts ("hi", "ok") recall nothing
    min_score: float = 0.0  # fused score floor, on top of the absolute relevance gate
    # Three at most: on conversational sets a fourth and fifth memory were nearly never the one
    # the turn needed (bench/conversational_recall.py, docs/benchmarks.md "Auto-recall").
    max_items: int = 3
    budget_chars: int = 2000  # the block's memories never exceed this many characters
    repeat_turns: int = 3  # a memory recalled in a session's last N turns is not recalled again
    # The absolute relevance gate: a hit is recalled when its keywords cover this share of the
    # prompt's, or its cosine similarity reaches the floor (0: the embedder's calibrated floor).
    min_keyword_coverage: float = 0.5
    similarity_floor: float = 0.0
    # A memory recalled by its cosine alone must come within this of the best memory's cosine:
    # the block is what the prompt is about, not also the next-closest topics (precision first).
    similarity_margin: float = 0.05
    # And any recalled memory must score at least this share of the best one's search score: a
    # memory sharing one of the prompt's words well behind the best is the next topic over
    # (bench/conversational_recall.py, docs/benchmarks.md "Auto-recall"). 0 turns it off.
    min_score_ratio: float = 0.75
    keyword_only_coverage: float = 0.3  # the coverage needed when there is no vector to judge by
    # On a session's first recall, up to this many standing preferences and decisions (bullets
    # marked [preference] or [decision]) closest to the prompt join the block even below the
    # gate: the model meets the user's standing rules once per session. 0 turns it off.
    primer_items: int = 3


@dataclass
class RerankSettings:
    # Who orders the candidates of precision search: "local" (offline: line-level evidence,
    # phrases, rare terms, dates), "http" (a cross-encoder behind POST {base_url}/rerank:
    # Cohere, Jina, TEI, Infinity, vLLM, llama.cpp) or "llm" (listwise, by an OpenAI-compatible
    # chat model when model is set, else by the client's model through MCP sampling).
    # A remote reranker that fails falls back to "local" with a warning.
    provider: str = "local"
    base_url: str = ""  # http: e.g. http://localhost:8080 (POST /rerank); llm: e.g. http://localhost:11434/v1
    api_key: str = ""  # falls back to $RERANK_API_KEY (http) or $OPENAI_API_KEY (llm)
    model: str = ""  # http: e.g. BAAI/bge-reranker-v2-m3; llm: a chat model, e.g. gpt-4.1-mini
    timeout: float = 10.0  # seconds per request
    retries: int = 1  # further attempts after a failed request
    candidates: int = 30  # how many first-stage hits the reranker reads
    # The local reranker also reads how close the query is to each candidate's best line, by
    # multilingual-e5 vectors of memory lines (index/line_vectors.py). They never leave this
    # machine. The background embeds the newest files' lines, at most line_vector_limit of them:
    # e5 embeds 20-25 lines a second on one core, so 6,000 lines keep a core busy about five
    # minutes whatever the workspace's size. The lines of the chunks precise searches rerank are
    # embedded on demand beyond the limit, within seconds (docs/benchmarks.md: LoCoMo precise
    # with half its lines at first, then those its searches asked for, as with all of them).
    line_vectors: bool = True
    line_vector_limit: int = 6_000


@dataclass
class UtilitySettings:
    # How much a memory's learned utility u (-1 penalized .. +1 rewarded) moves its score in every
    # search mode and in recall: score × (1 + weight × sign(u) × √|u|). 0 turns utility off.
    weight: float = 0.5
    half_life_days: float = 30.0  # the decay the sleep cycle applies: utility halves toward neutral


@dataclass
class EpisodeSettings:
    # The server writes one episode (memory/episodes/) per session that did real work: when the
    # client disconnects, or after this many minutes without a tool call.
    enabled: bool = True
    idle_minutes: float = 30.0


@dataclass
class SessionsSettings:
    # Conversation transcripts (Claude Code, OpenClaw JSONL) searched as a source of their own:
    # files or folders (searched recursively for *.jsonl). Empty: off. Never shown to shared clients.
    paths: list[str] = field(default_factory=list)
    delta_bytes: int = 100_000  # a transcript that grew is re-indexed once it grew this much...
    delta_messages: int = 50  # ... or by this many messages


@dataclass
class SleepSettings:
    # The sleep cycle (`mcp-memory sleep`): consolidation, utility decay, graph upkeep, log
    # truncation, index compaction and a note for the next session. `serve` runs it every
    # interval_hours (0: never), when no request came for quiet_minutes.
    interval_hours: float = 24.0
    quiet_minutes: float = 5.0
    log_days: int = 30  # hooks.log lines and ledger rows older than this are dropped
    stale_chain_days: int = 180  # a chain seen once and not since is archived
    # Who decides what a newer statement supersedes: "rules" (offline) or "llm" (the chat model
    # of [capture] llm_model / llm_base_url / llm_api_key reads each close pair).
    judge: str = "rules"


@dataclass
class RulesSettings:
    # Rules pinned by a fenced YAML block in MEMORY.md (`rules: [{rule, weight}]`), shown at the
    # start of every session and on a session's first recall. Off by default: it turns the
    # content of a file into standing instructions, so only turn it on when you alone can write
    # MEMORY.md.
    pinning: bool = False
    min_weight: float = 1.0  # rules weighing at least this are pinned


@dataclass
class WarmSettings:
    # One warm background process per workspace and user holds the index and the model for all
    # the stdio servers and hooks of the workspace: `serve` over stdio becomes a thin front that
    # forwards to it, and hooks ask it (starting it when none runs). false: every server and
    # hook works in its own process, as when no background process is allowed.
    enabled: bool = True
    idle_minutes: float = 10.0  # it exits after this long with no client connected and no request
    max_clients: int = 64  # stdio fronts it serves at once


@dataclass
class SyncSettings:
    # `mcp-memory sync` in a workspace that is a git repository: commit the memory files, fetch and
    # merge the remote branch (appends merge by union), push. `serve` runs it every interval_minutes
    # (0: never).
    interval_minutes: float = 0.0
    remote: str = "origin"
    branch: str = ""  # the remote branch to pull and push; empty: the name of the current branch
    timeout_seconds: float = 60.0  # each git command is stopped after this long


@dataclass
class ScopesSettings:
    # Memories of a project or agent live in memory/scopes/<name>/; searches cover the scope plus the
    # global memory. default: the scope of stores and searches that name none ($MCP_MEMORY_SCOPE,
    # serve --scope); empty: the global memory. from_cwd: hooks take the scope from the client's
    # working directory (its git repository's folder name) when no default is set.
    default: str = ""
    from_cwd: bool = False


@dataclass
class StorageSettings:
    # With index_path an object-store URI (s3://, gs://, az://): each call to the shared vector
    # table waits at most this long; an unreachable store is then left alone for a minute and
    # this machine embeds on its own.
    timeout_seconds: float = 10.0


@dataclass
class PrivacySettings:
    # Files (glob patterns, workspace-relative) that shared clients and shared tokens never see
    # through search, get, recall or resources.
    private_paths: list[str] = field(default_factory=lambda: ["MEMORY.md", "memory.md"])
    # The client hooks of this workspace serve others (a group chat's agent, a team bot): their
    # recall, capture, session end and rescue leave the private files out, whichever process answers
    # them (a --shared server, the warm process, or the hook itself).
    shared_hooks: bool = False


@dataclass
class Settings:
    workspace: Path = field(default_factory=lambda: default_workspace())
    # Where the derived index lives: a folder (relative paths are inside the workspace), or an
    # object-store URI (s3://bucket/prefix, gs://, az://, s3+ddb://) for a vector table shared by
    # machines while the rest of the index stays in <workspace>/.mcp-memory. Empty: that folder.
    index_path: str = ""
    # Passed to LanceDB for the object store: endpoint, region, allow_http, access keys...
    # (the standard AWS_*, GOOGLE_*, AZURE_* environment variables work too).
    storage_options: dict[str, str] = field(default_factory=dict)
    extra_paths: list[str] = field(default_factory=list)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    capture: CaptureSettings = field(default_factory=CaptureSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    utility: UtilitySettings = field(default_factory=UtilitySettings)
    sleep: SleepSettings = field(default_factory=SleepSettings)
    sessions: SessionsSettings = field(default_factory=SessionsSettings)
    episodes: EpisodeSettings = field(default_factory=EpisodeSettings)
    privacy: PrivacySettings = field(default_factory=PrivacySettings)
    scopes: ScopesSettings = field(default_factory=ScopesSettings)
    rules: RulesSettings = field(default_factory=RulesSettings)
    warm: WarmSettings = field(default_factory=WarmSettings)
    storage: StorageSettings = field(default_factory=StorageSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)

    @property
    def index_dir(self) -> Path:
        """Local folder for the keyword index, state database and locks."""
        if self.index_path and "://" not in self.index_path:
            path = Path(self.index_path).expanduser()
            return path if path.is_absolute() else self.workspace / path
        return self.workspace / INDEX_DIRNAME

    @property
    def vector_uri(self) -> str:
        """The chunk table's folder, inside the index dir (always local: see ``shared_vectors_uri``)."""
        return str(self.index_dir / "lance")

    @property
    def shared_vectors_uri(self) -> str:
        """The object-store URI of the vector table machines share, or "" for a local index."""
        return self.index_path if "://" in self.index_path else ""


def default_workspace() -> Path:
    """``$MCP_MEMORY_WORKSPACE``, else a per-user data folder (XDG, macOS or Windows convention)."""
    env = os.environ.get("MCP_MEMORY_WORKSPACE")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "mcp-memory"


_SECTIONS = {
    "embedding": EmbeddingSettings, "chunking": ChunkingSettings, "search": SearchSettings, "capture": CaptureSettings,
    "recall": RecallSettings, "rerank": RerankSettings, "utility": UtilitySettings,
    "sleep": SleepSettings, "sessions": SessionsSettings, "warm": WarmSettings,
    "privacy": PrivacySettings, "episodes": EpisodeSettings, "storage": StorageSettings,
    "rules": RulesSettings, "scopes": ScopesSettings, "sync": SyncSettings,
}
_TOP_LEVEL = {"index_path", "extra_paths"}
_STORAGE_OPTIONS = "storage_options"  # a free-form table: its keys are the object store's, not ours


def load_settings(
    workspace: str | os.PathLike[str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Build the settings for one workspace from every source, in precedence order.

    ``overrides`` uses dotted keys (``{"search.max_results": 10, "index_path": "..."}``).
    """
    environ = dict(os.environ if environ is None else environ)
    ws = Path(workspace).expanduser() if workspace else default_workspace()
    settings = Settings(workspace=ws.resolve() if ws.exists() else ws.absolute())

    path = Path(config_file).expanduser() if config_file else settings.workspace / CONFIG_FILENAME
    if config_file and not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot parse {path}: {exc}") from exc
        _apply_mapping(settings, data, source=str(path))

    for key, raw in environ.items():
        if not key.startswith("MCP_MEMORY_") or key == "MCP_MEMORY_WORKSPACE":
            continue
        dotted = _env_key_to_dotted(key[len("MCP_MEMORY_") :].lower())
        if dotted is not None:
            _set(settings, dotted, raw, source=key, from_string=True)

    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set(settings, dotted, value, source="command line")

    if settings.embedding.provider == "openai" and not settings.embedding.api_key:
        settings.embedding.api_key = environ.get("OPENAI_API_KEY", "")
    if settings.capture.llm_model and not settings.capture.llm_api_key:
        settings.capture.llm_api_key = environ.get("OPENAI_API_KEY", "")
    _validate(settings)
    return settings


def _env_key_to_dotted(rest: str) -> str | None:
    if rest in _TOP_LEVEL:
        return rest
    if rest.startswith(_STORAGE_OPTIONS + "_"):  # MCP_MEMORY_STORAGE_OPTIONS_AWS_ENDPOINT=...
        return f"{_STORAGE_OPTIONS}.{rest[len(_STORAGE_OPTIONS) + 1:]}"
    if rest == "scope":  # $MCP_MEMORY_SCOPE, the short name of $MCP_MEMORY_SCOPES_DEFAULT
        return "scopes.default"
    for section in _SECTIONS:
        if rest.startswith(section + "_"):
            return f"{section}.{rest[len(section) + 1:]}"
    return None


def _apply_mapping(settings: Settings, data: dict[str, Any], source: str) -> None:
    for key, value in data.items():
        if key in _SECTIONS or key == _STORAGE_OPTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: [{key}] must be a table")
            for sub, subvalue in value.items():
                _set(settings, f"{key}.{sub}", subvalue, source=source)
        else:
            _set(settings, key, value, source=source)


def _set(settings: Settings, dotted: str, value: Any, source: str, from_string: bool = False) -> None:
    if dotted.startswith(_STORAGE_OPTIONS + "."):
        settings.storage_options[dotted.split(".", 1)[1].lower()] = _storage_option(value, dotted, source)
        return
    if "." in dotted:
        section, name = dotted.split(".", 1)
        target = getattr(settings, section, None) if section in _SECTIONS else None
    else:
        target, name = (settings if dotted in _TOP_LEVEL else None), dotted
    fields = {f.name: f for f in dataclasses.fields(target)} if target is not None else {}
    if name not in fields:
        raise ConfigError(f"{source}: unknown setting {dotted!r}")
    current = getattr(target, name)
    setattr(target, name, _coerce(current, value, dotted, source, from_string))


def _storage_option(value: Any, dotted: str, source: str) -> str:
    """An object-store option as the string LanceDB takes (``true``, ``10s``, a key...)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ConfigError(f"{source}: {dotted} must be a string, number or boolean, got {value!r}")


def _coerce(current: Any, value: Any, dotted: str, source: str, from_string: bool) -> Any:
    """Check a value against the default's type; strings are parsed only from the environment."""
    try:
        if from_string:
            return _parse_string(current, str(value))
        if isinstance(current, bool):
            ok = isinstance(value, bool)
        elif isinstance(current, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(current, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            value = float(value) if ok else value
        elif isinstance(current, list):
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        else:
            ok = isinstance(value, str)
        if not ok:
            raise ValueError(value)
        return value
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: {dotted} must be {type(current).__name__}, got {value!r}") from None


def _parse_string(current: Any, raw: str) -> Any:
    if isinstance(current, bool):
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise ValueError(raw)
    if isinstance(current, int):
        return int(raw)
    if isinstance(current, float):
        return float(raw)
    if isinstance(current, list):
        return [p for p in raw.split(os.pathsep) if p]
    return raw


def _validate(s: Settings) -> None:
    """Refuse settings that cannot work, naming the key (``ConfigError``); section by section."""
    _check_embedding_and_chunking(s)
    _check_search(s)
    _check_capture_and_recall(s)
    _check_rerank_sessions_sleep(s)
    _check_rest(s)


def _check_embedding_and_chunking(s: Settings) -> None:
    """[embedding] and [chunking]."""
    if s.embedding.provider not in {"local", "e5", "openai", "none"}:
        raise ConfigError(
            f"embedding.provider must be one of local, e5, openai, none; got {s.embedding.provider!r}"
        )
    if s.embedding.provider == "openai" and not s.embedding.model:
        raise ConfigError("embedding.provider = 'openai' needs embedding.model")
    if s.embedding.batch_size < 1:
        raise ConfigError("embedding.batch_size must be at least 1")
    if s.chunking.tokens < 16:
        raise ConfigError("chunking.tokens must be at least 16")
    if not 0 <= s.chunking.overlap < s.chunking.tokens:
        raise ConfigError("chunking.overlap must be between 0 and chunking.tokens - 1")


def _check_search(s: Settings) -> None:
    """[search] and [warm]."""
    if s.search.max_results < 1:
        raise ConfigError("search.max_results must be at least 1")
    if s.warm.idle_minutes <= 0 or s.warm.max_clients < 1:
        raise ConfigError("warm.idle_minutes must be positive and warm.max_clients at least 1")
    if s.search.candidate_multiplier < 1:
        raise ConfigError("search.candidate_multiplier must be at least 1")
    if s.search.citation_lines < 1:
        raise ConfigError("search.citation_lines must be at least 1")
    if s.search.half_life_days <= 0:
        raise ConfigError("search.half_life_days must be positive")
    if not 0.0 <= s.search.mmr_lambda <= 1.0:
        raise ConfigError("search.mmr_lambda must be between 0 and 1")


def _check_capture_and_recall(s: Settings) -> None:
    """[capture] and [recall]."""
    if not 0.0 < s.capture.dedupe_threshold <= 1.0:
        raise ConfigError("capture.dedupe_threshold must be in (0, 1]")
    if s.capture.extractor not in {"auto", "rules", "llm", "sampling"}:
        raise ConfigError(f"capture.extractor must be one of auto, rules, llm, sampling; got {s.capture.extractor!r}")
    if s.capture.extractor == "llm" and not s.capture.llm_model:
        raise ConfigError("capture.extractor = 'llm' needs capture.llm_model")
    for name in ("max_messages", "max_facts"):
        if getattr(s.capture, name) < 1:
            raise ConfigError(f"capture.{name} must be at least 1")
    if not 0 <= s.capture.min_chars < s.capture.max_chars:
        raise ConfigError("capture.min_chars must be at least 0 and below capture.max_chars")
    if s.recall.max_items < 1 or s.recall.budget_chars < 100:
        raise ConfigError("recall.max_items must be at least 1 and recall.budget_chars at least 100")
    if s.recall.min_prompt_chars < 0 or s.recall.repeat_turns < 0 or s.recall.primer_items < 0:
        raise ConfigError("recall.min_prompt_chars, recall.repeat_turns and recall.primer_items must not be negative")
    if not 0 <= s.recall.similarity_margin <= 2:
        raise ConfigError("recall.similarity_margin must be between 0 and 2 (2: no margin)")
    if not 0 <= s.recall.min_score_ratio <= 1:
        raise ConfigError("recall.min_score_ratio must be between 0 and 1 (0: off)")


def _check_rerank_sessions_sleep(s: Settings) -> None:
    """[rerank], [sessions] and [sleep]."""
    if s.rerank.provider not in {"local", "http", "llm"}:
        raise ConfigError(f"rerank.provider must be one of local, http, llm; got {s.rerank.provider!r}")
    if s.rerank.provider == "http" and not s.rerank.base_url:
        raise ConfigError("rerank.provider = 'http' needs rerank.base_url")
    if s.rerank.timeout <= 0 or s.rerank.retries < 0 or not 1 <= s.rerank.candidates <= 200:
        raise ConfigError("rerank.timeout must be positive, rerank.retries not negative and "
                          "rerank.candidates between 1 and 200")
    if s.sessions.delta_bytes < 0 or s.sessions.delta_messages < 0:
        raise ConfigError("sessions.delta_bytes and sessions.delta_messages must not be negative")
    if s.sleep.judge not in {"rules", "llm"}:
        raise ConfigError(f"sleep.judge must be rules or llm; got {s.sleep.judge!r}")
    if s.sleep.judge == "llm" and not s.capture.llm_model:
        raise ConfigError("sleep.judge = 'llm' needs capture.llm_model (and llm_base_url for a local server)")
    if s.sleep.interval_hours < 0 or s.sleep.quiet_minutes < 0 or s.sleep.log_days < 1 or s.sleep.stale_chain_days < 1:
        raise ConfigError("sleep.interval_hours and sleep.quiet_minutes must not be negative, sleep.log_days and "
                          "sleep.stale_chain_days at least 1")


def _check_rest(s: Settings) -> None:
    """[utility], [rules], [sync], [scopes], [storage], index_path, [episodes] and the search weights."""
    if not 0 <= s.utility.weight <= 1 or s.utility.half_life_days <= 0:
        raise ConfigError("utility.weight must be between 0 and 1 and utility.half_life_days positive")
    if not 0 < s.rules.min_weight <= 1000:
        raise ConfigError("rules.min_weight must be above 0 and at most 1000")
    if s.sync.interval_minutes < 0 or not s.sync.timeout_seconds > 0 or not s.sync.remote.strip():
        raise ConfigError("sync.interval_minutes must not be negative, sync.timeout_seconds must be positive "
                          "and sync.remote must not be empty")
    if s.scopes.default.strip():
        from mcp_memory.core.scopes import ScopeError, check_name

        try:
            s.scopes.default = check_name(s.scopes.default)
        except ScopeError as exc:
            raise ConfigError(f"scopes.default: {exc}") from None
    if not s.storage.timeout_seconds > 0:
        raise ConfigError("storage.timeout_seconds must be positive")
    if s.shared_vectors_uri:
        scheme, _, rest = s.shared_vectors_uri.partition("://")
        if scheme.lower() not in OBJECT_STORE_SCHEMES:
            raise ConfigError(f"index_path {s.index_path!r}: a folder or an object-store URI "
                              f"({', '.join(f'{x}://' for x in OBJECT_STORE_SCHEMES)}) is needed")
        if not rest.strip("/"):
            raise ConfigError(f"index_path {s.index_path!r} names no bucket")
    if not s.episodes.idle_minutes > 0:
        raise ConfigError("episodes.idle_minutes must be positive")
    if s.search.vector_weight < 0 or s.search.text_weight < 0:
        raise ConfigError("search weights must not be negative")
    if s.search.vector_weight + s.search.text_weight == 0:
        raise ConfigError("search.vector_weight + search.text_weight must be positive")
