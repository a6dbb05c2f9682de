"""What each dashboard page shows: the façade's answers, filtered for the caller, shaped for a template.

Every view takes a ``View`` (the open memory, the caller's access, the query parameters) and
returns a ``Page``. A caller that may not see private files gets the façade's
``include_private=False`` answers, and the logs (timeline, recalls) are filtered here on
the resolved paths they name: an entry of the owner's shows a shared caller only its lines
in shared files, never the owner's prompts nor what a capture skipped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mcp_memory.core.hits import SearchAnswer, SearchHit
from mcp_memory.core.privacy import not_shared
from mcp_memory.core.requests import SearchRequest
from mcp_memory.dashboard.auth import Access
from mcp_memory.dashboard.graph_svg import OUTCOME_COLOURS, chain_link, chains_svg
from mcp_memory.dashboard.links import local_path
from mcp_memory.dashboard.render import (
    clamp_range,
    highlight,
    parse_range,
    query_terms,
    render_markdown,
    source_lines,
)
from mcp_memory.errors import MemoryInputError, PathError, SearchError
from mcp_memory.experience.graph import EXPERIENCE_FILE, OUTCOMES

if TYPE_CHECKING:
    from mcp_memory.lifecycle.health import SharedStatus, StatusReport
    from mcp_memory.memory import Memory
    from mcp_memory.writes.recall_log import RecallEvent
    from mcp_memory.writes.write_log import WriteEvent

MODES = ("default", "precise", "deep")
DEFAULT_RESULTS = 10
MAX_RESULTS = 50
HISTORY = 200  # log rows shown on the timeline and recall pages (the latest)
SHOWN_LINES = 12  # lines of a hit's chunk shown under it
UTILITY_LIST = 10


class PageError(Exception):
    """A request the page cannot answer: shown to the person with ``status``."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def refused_path(path: str) -> PageError:
    """The one answer for a path a page cannot show, whatever the reason and whoever asks.

    Missing, private, outside the workspace, not a memory file, not text: the same words
    and status, so the pages cannot be used to learn which files exist on the disk.
    """
    return PageError(not_shared(path), 404)


@dataclass(frozen=True)
class View:
    memory: Memory
    access: Access
    params: Mapping[str, str]

    def param(self, name: str, default: str = "") -> str:
        return str(self.params.get(name, default) or default).strip()

    @property
    def private(self) -> bool:
        return self.access.include_private

    def visible(self, path: str) -> bool:
        return self.private or not self.memory.privacy.is_private(path)


@dataclass
class Page:
    template: str
    title: str
    context: dict[str, Any] = field(default_factory=dict)
    status: int = 200


def file_url(path: str, start: int | None = None, end: int | None = None, source: bool = False) -> str:
    """The dashboard URL of a memory file, at a line (its range marked) when given."""
    url = f"/files/{quote(path)}"
    query = []
    if source:
        query.append("view=source")
    if start:
        query.append(f"hl={start}-{end or start}")
    url += ("?" + "&".join(query)) if query else ""
    return url + (f"#L{start}" if start else "")


# ----- overview -------------------------------------------------------------------------------
def overview(view: View) -> Page:
    memory = view.memory
    status = status_view(view)
    summary = memory.experience.summary(view.private)
    return Page("overview.html", "Overview", {
        "status": status,
        "files": status.files,
        "writes": _visible_writes(view, memory.write_log.recent(50))[:5],
        "recalls": _visible_recalls(view, memory.recall_log.recent(50))[:5],
        "graph": summary,
        "learned": len(memory.utility.values()) if view.private else None,
    })


# ----- search ---------------------------------------------------------------------------------
def search(view: View) -> Page:
    query = view.param("q")
    mode = view.param("mode", "default")
    if mode not in MODES:
        raise PageError(f"mode must be one of {', '.join(MODES)}")
    try:
        count = min(MAX_RESULTS, max(1, int(view.param("k", str(DEFAULT_RESULTS)))))
    except ValueError:
        raise PageError("k must be a number of results") from None
    context: dict[str, Any] = {"q": query, "mode": mode, "modes": MODES, "k": count, "hits": [], "answer": None}
    if not query:
        return Page("search.html", "Search", context)
    memory = view.memory
    try:
        request = SearchRequest.of(query, max_results=count, include_private=view.private)
        if mode == "precise":
            answer = memory.precise_search(request)
        elif mode == "deep":
            answer = memory.deep_search(request)
        else:
            answer = SearchAnswer(memory.search(request))
    except SearchError as exc:
        raise PageError(str(exc)) from None
    utility = memory.utility.values()
    terms = query_terms(query)
    context["answer"] = answer
    context["hits"] = [_hit(view, hit, utility, terms) for hit in answer.hits if view.visible(hit.path)]
    return Page("search.html", f"Search: {query}", context)


def _hit(view: View, hit: SearchHit, utility: Mapping[str, float], terms: list[str]) -> dict[str, Any]:
    """A hit with its chunk's lines (the matched ones marked, the query's words highlighted)."""
    first = hit.chunk_start_line
    last = min(hit.chunk_end_line, max(hit.end_line, first + SHOWN_LINES - 1))
    lines: list[dict[str, Any]] = []
    try:
        got = view.memory.get(hit.path, first, last - first + 1, include_private=view.private)
        numbered = list(enumerate(got.text.split("\n"), got.from_line))
    except (PathError, MemoryInputError):
        numbered = list(enumerate(hit.snippet.split("\n"), hit.start_line))
    for number, text in numbered:
        lines.append({"number": number, "html": highlight(text, terms),
                      "matched": hit.start_line <= number <= hit.end_line})
    return {
        "forget_url": f"/forget?path={quote(hit.path)}&line={_best_line(hit, numbered, terms)}",
        "hit": hit,
        "url": file_url(hit.path, hit.start_line, hit.end_line, source=not hit.path.endswith(".md")),
        "lines": lines,
        "utility": utility.get(hit.id) if hit.id else None,
    }


def _best_line(hit: SearchHit, numbered: list[tuple[int, str]], terms: list[str]) -> int:
    """The line a "forget" of this hit proposes: its first matched memory line naming a query word."""
    content = [(n, t) for n, t in numbered
               if hit.start_line <= n <= hit.end_line and t.strip() and not t.lstrip().startswith("#")]
    for number, text in content:
        if any(term in text.casefold() for term in terms):
            return number
    return content[0][0] if content else hit.start_line


# ----- files ----------------------------------------------------------------------------------
def files(view: View) -> Page:
    listed = view.memory.reader.list_files(view.private)
    listed.sort(key=lambda f: (f.date is not None, -(f.date.toordinal() if f.date else 0), f.path))
    return Page("files.html", "Files", {
        "files": [{"info": f, "url": file_url(f.path)} for f in listed],
        "total_bytes": sum(f.size for f in listed),
    })


def file(view: View, path: str) -> Page:
    try:
        lines = view.memory.get(path, include_private=view.private)
    except (PathError, MemoryInputError):
        raise refused_path(path) from None
    marked = clamp_range(parse_range(view.param("hl")), lines.total_lines)
    source = view.param("view") == "source" or not lines.path.endswith(".md")
    context: dict[str, Any] = {
        "path": lines.path, "total": lines.total_lines, "source": source, "marked": marked,
        "rendered_url": file_url(lines.path), "source_url": file_url(lines.path, source=True),
        "quoted": quote(lines.path),
    }
    if source:
        context["lines"] = source_lines(lines.text, marked)
    else:
        context["html"] = render_markdown(lines.text, marked)
    return Page("file.html", lines.path, context)


# ----- timeline -------------------------------------------------------------------------------
def timeline(view: View) -> Page:
    events = _visible_writes(view, view.memory.write_log.recent(HISTORY))
    days: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for event in events:
        when = dt.datetime.fromtimestamp(event.at)
        sessions = days.setdefault(when.date().isoformat(), {})
        sessions.setdefault(event.session or "", []).append(_write(event, when))
    shown = [{"day": day, "sessions": [{"session": key, "events": items} for key, items in sessions.items()],
              "stored": sum(len(e["written"]) for items in sessions.values() for e in items),
              "skipped": sum(len(e["skipped"]) + e["hidden_skips"] for items in sessions.values() for e in items)}
             for day, sessions in days.items()]
    return Page("timeline.html", "Timeline", {"days": shown, "limit": HISTORY})


def _write(event: WriteEvent, when: dt.datetime) -> dict[str, Any]:
    return {"event": event, "time": when.strftime("%H:%M:%S"),
            "written": [{"line": m, "url": file_url(m.path, m.line)} for m in event.written],
            "skipped": event.skipped, "hidden_skips": 0}


def _visible_writes(view: View, events: list[WriteEvent]) -> list[WriteEvent]:
    """The events a caller may see: the owner's reduced to their lines in shared files for a shared caller."""
    if view.private:
        return events
    out = []
    for event in events:
        written = [m for m in event.written if view.visible(m.path)]
        if event.by_owner:
            if not written:
                continue
            event = replace(event, written=written, skipped=[], message=f"wrote {len(written)} lines")
        else:
            event = replace(event, written=written)
        out.append(event)
    return out


# ----- recalls --------------------------------------------------------------------------------
def recalls(view: View) -> Page:
    events = _visible_recalls(view, view.memory.recall_log.recent(HISTORY))
    sessions: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        when = dt.datetime.fromtimestamp(event.at)
        sessions.setdefault(event.session or "", []).append({
            "event": event, "time": when.strftime("%Y-%m-%d %H:%M:%S"),
            "shown": [{"item": i, "url": file_url(i.path, i.start_line, i.end_line)} for i in event.items]})
    return Page("recalls.html", "Recalls", {
        "sessions": [{"session": key, "recalls": items} for key, items in sessions.items()], "limit": HISTORY})


def _visible_recalls(view: View, events: list[RecallEvent]) -> list[RecallEvent]:
    """The recalls a caller may see: a shared caller sees only shared callers' recalls (never the owner's prompts)."""
    if view.private:
        return events
    out = []
    for event in events:
        if event.by_owner:
            continue
        items = [i for i in event.items if view.visible(i.path)]
        if items:
            out.append(replace(event, items=items))
    return out


# ----- experience -----------------------------------------------------------------------------
def experience(view: View) -> Page:
    memory = view.memory
    outcome = view.param("outcome")
    tag = view.param("tag")
    query = view.param("q")
    if outcome and outcome not in OUTCOMES:
        raise PageError(f"outcome must be one of {', '.join(OUTCOMES)}")
    chains = memory.experience.chains(view.private)
    tags = sorted({t for c in chains for t in c.tags})
    if query:
        try:
            matches = memory.experience.query(query, outcome or None, [tag] if tag else None, max_results=100,
                                              include_private=view.private)
        except MemoryInputError as exc:
            raise PageError(str(exc)) from None
        chosen = [m.chain for m in matches]
    else:
        chosen = [c for c in chains if (not outcome or c.outcome == outcome) and (not tag or tag in c.tags)]
        chosen.sort(key=lambda c: (c.last_seen, c.count), reverse=True)
    summary = memory.experience.summary(view.private)
    rewarded, penalized = _utility_lists(view)
    return Page("experience.html", "Experience", {
        "svg": chains_svg(chosen), "chains": [{"chain": c, "url": chain_link(c)} for c in chosen[:100]],
        "total": len(chains), "shown": len(chosen), "summary": summary, "outcomes": OUTCOMES, "tags": tags,
        "outcome": outcome, "tag": tag, "q": query, "colours": OUTCOME_COLOURS,
        "rewarded": rewarded, "penalized": penalized,
        "episodes": memory.episodes.find(max_results=15, include_private=view.private),
        "experience_url": file_url(EXPERIENCE_FILE),
    })


def _utility_lists(view: View) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The most rewarded and the most penalized memories the caller may see, with where they are now.

    One lookup for both lists (it reads every file the caller may see); a few more ids than
    shown are asked for, since some may be gone from the files or hidden from this caller.
    """
    values = view.memory.utility.values()
    best = sorted(((v, k) for k, v in values.items() if v > 0), reverse=True)
    worst = sorted((v, k) for k, v in values.items() if v < 0)
    wanted = [k for _, k in best[: UTILITY_LIST * 3]] + [k for _, k in worst[: UTILITY_LIST * 3]]
    found = view.memory.feedback.locate_many(wanted, view.private) if wanted else {}
    lists: list[list[dict[str, Any]]] = []
    for ranked in (best, worst):
        out: list[dict[str, Any]] = []
        for value, key in ranked:
            located = found.get(key)
            if located is None or not view.visible(located.path):
                continue
            out.append({"id": key, "utility": value, "memory": located,
                        "url": file_url(located.path, located.start_line, located.end_line)})
            if len(out) == UTILITY_LIST:
                break
        lists.append(out)
    return lists[0], lists[1]


# ----- status ---------------------------------------------------------------------------------
def status_view(view: View) -> StatusReport | SharedStatus:
    """The status this caller may be shown: the full report for the owner, else the reduced view
    (``SharedStatus``) that the MCP tool and resource give a shared client too, never the raw report."""
    return view.memory.status(view.private).view()


def status(view: View) -> Page:
    context: dict[str, Any] = {"status": status_view(view), "doctor": None, "pending": None}
    if view.private:
        context["doctor"] = view.memory.doctor()
    return Page("status.html", "Status", context)


# ----- actions: the forms and what they do ------------------------------------------------------
def line_of(view: View, path: str, line_param: str) -> tuple[str, int, str]:
    """(resolved path, line, text) of the line a form names; PageError when it cannot be read."""
    try:
        line = int(line_param)
    except ValueError:
        raise PageError("line must be a line number") from None
    try:  # the path first: whether it may be read is answered alike for every reason
        resolved = view.memory.get(path, include_private=view.private).path
    except (PathError, MemoryInputError):
        raise refused_path(path) from None
    try:
        got = view.memory.get(resolved, line, 1, include_private=view.private)
    except (PathError, MemoryInputError) as exc:  # a line past the end of a file this caller may read
        raise PageError(str(exc), 404) from None
    return got.path, line, got.text.rstrip("\r")  # a CRLF file's line, as forget and edit compare it


def forget_form(view: View) -> Page:
    path, line, text = line_of(view, view.param("path"), view.param("line"))
    if not text.strip():
        raise PageError(f"{path} line {line} is blank: nothing to forget")
    return Page("forget.html", "Forget", {"path": path, "line": line, "text": text,
                                          "next": local_path(view.param("next"), file_url(path))})


def edit_form(view: View) -> Page:
    path, line, text = line_of(view, view.param("path"), view.param("line"))
    return Page("edit.html", "Edit a line", {"path": path, "line": line, "text": text,
                                             "back": file_url(path, line, source=True)})


def forget_line(view: View) -> tuple[str, str]:
    """Remove the confirmed line if it still reads as shown; (note, where to go next)."""
    path, line, text = line_of(view, view.param("path"), view.param("line"))
    if text != view.params.get("expected", ""):
        raise PageError(f"{path} line {line} changed since it was shown; nothing was removed", 409)
    try:
        result = view.memory.editor.forget(path=path, line=line, confirm=True, include_private=view.private)
    except (PathError, MemoryInputError) as exc:
        raise PageError(str(exc)) from None
    return result.message, local_path(view.param("next"), file_url(path))


def edit_line(view: View) -> tuple[str, str]:
    path, line, _ = line_of(view, view.param("path"), view.param("line"))
    try:
        edited = view.memory.line_editor.replace(path, line, view.params.get("expected", ""),
                                                 view.params.get("text", ""), include_private=view.private)
    except (MemoryInputError, PathError) as exc:
        raise PageError(str(exc)) from None
    return f"edited {edited.citation}", file_url(edited.path, edited.line, source=True)


def change_utility(view: View, reward: bool) -> tuple[str, str]:
    memory_id = view.param("id")
    try:
        if reward:
            change = view.memory.feedback.reward(memory_id, include_private=view.private)
        else:
            change = view.memory.feedback.penalize(memory_id, include_private=view.private)
    except MemoryInputError as exc:
        raise PageError(str(exc)) from None
    verb = "rewarded" if reward else "penalized"
    note = f"{verb} {change.memory_id}: utility {change.before:+.2f} → {change.after:+.2f}"
    return note, local_path(view.param("next"))
