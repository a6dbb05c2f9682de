"""Experience chains drawn as an SVG graph: causes, actions and effects in three columns.

Chains that share a cause or an action share its node, so a cause that led to several
actions (or an action tried for several causes) shows as a fork. Each cause → action →
effect path is coloured by the chain's latest outcome and drawn thicker the more often it
was seen. Only presentation attributes are used (no ``style``): the page's
Content-Security-Policy allows no inline styles. Every text is escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from markupsafe import Markup, escape

from mcp_memory.experience.graph import EXPERIENCE_FILE, Chain

OUTCOME_COLOURS = {"success": "#2e7d32", "failure": "#c62828", "partial": "#e08a00", "unknown": "#757575"}
NODE_FILLS = {"success": "#e8f5e9", "failure": "#ffebee", "partial": "#fff3e0", "unknown": "#f5f5f5"}
MAX_CHAINS = 60
_COLUMN_X = (10, 330, 650)
_NODE_W = 280
_NODE_H = 36
_GAP = 10
_TOP = 34
_LABEL_CHARS = 40


@dataclass
class _Node:
    key: str
    text: str
    row: int
    outcome: str = "unknown"  # effects only: their chain's outcome

    @property
    def y(self) -> int:
        return _TOP + self.row * (_NODE_H + _GAP)


def chains_svg(chains: list[Chain], limit: int = MAX_CHAINS) -> Markup:
    """The SVG of up to ``limit`` chains; an empty Markup when there are none."""
    chains = chains[:limit]
    if not chains:
        return Markup("")
    columns: tuple[dict[str, _Node], dict[str, _Node], dict[str, _Node]] = ({}, {}, {})
    paths: list[tuple[Chain, _Node, _Node, _Node]] = []
    for chain in chains:
        cause = _node(columns[0], chain.cause, chain.cause)
        action = _node(columns[1], f"{cause.key}\n{chain.action}", chain.action)
        effect = _node(columns[2], chain.id or f"{action.key}\n{chain.effect}", chain.effect)
        effect.outcome = chain.outcome if chain.outcome in OUTCOME_COLOURS else "unknown"
        paths.append((chain, cause, action, effect))
    rows = max(len(column) for column in columns)
    width = _COLUMN_X[2] + _NODE_W + 10
    height = _TOP + rows * (_NODE_H + _GAP) + 4
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" aria-label="experience chains">']
    for x, label in zip(_COLUMN_X, ("cause", "action", "effect"), strict=True):
        out.append(f'<text x="{x + 4}" y="20" font-size="13" font-weight="bold" fill="#444">{label}</text>')
    for chain, cause, action, effect in paths:
        colour = OUTCOME_COLOURS.get(chain.outcome, OUTCOME_COLOURS["unknown"])
        stroke = 1.5 + min(chain.count, 6) * 0.6
        title = escape(f"{chain.cause} → {chain.action} → {chain.effect} ({chain.outcome}, seen {chain.count}×)")
        out.append(f'<g class="edge {escape(chain.outcome)}"><title>{title}</title>')
        out.append(_edge(0, cause, 1, action, colour, stroke))
        out.append(_edge(1, action, 2, effect, colour, stroke))
        out.append("</g>")
    for index, column in enumerate(columns):
        for node in column.values():
            out.append(_box(index, node))
    out.append("</svg>")
    return Markup("".join(out))


def _node(column: dict[str, _Node], key: str, text: str) -> _Node:
    folded = " ".join(key.casefold().split())
    if folded not in column:
        column[folded] = _Node(folded, text, len(column))
    return column[folded]


def _edge(left: int, a: _Node, right: int, b: _Node, colour: str, stroke: float) -> str:
    x1, y1 = _COLUMN_X[left] + _NODE_W, a.y + _NODE_H // 2
    x2, y2 = _COLUMN_X[right], b.y + _NODE_H // 2
    middle = (x1 + x2) // 2
    return (f'<path d="M{x1},{y1} C{middle},{y1} {middle},{y2} {x2 - 6},{y2}" fill="none" stroke="{colour}" '
            f'stroke-width="{stroke:.1f}" stroke-opacity="0.8"/>'
            f'<path d="M{x2 - 8},{y2 - 5} L{x2},{y2} L{x2 - 8},{y2 + 5} Z" fill="{colour}"/>')


def _box(column: int, node: _Node) -> str:
    x = _COLUMN_X[column]
    if column == 2:
        fill, stroke = NODE_FILLS[node.outcome], OUTCOME_COLOURS[node.outcome]
    else:
        fill, stroke = "#ffffff", "#90a4ae"
    label = node.text if len(node.text) <= _LABEL_CHARS else node.text[: _LABEL_CHARS - 1].rstrip() + "…"
    return (f'<g class="node"><title>{escape(node.text)}</title>'
            f'<rect x="{x}" y="{node.y}" width="{_NODE_W}" height="{_NODE_H}" rx="6" fill="{fill}" '
            f'stroke="{stroke}"/><text x="{x + 10}" y="{node.y + 23}" font-size="13" fill="#222">'
            f"{escape(label)}</text></g>")


def chain_link(chain: Chain) -> str:
    """The dashboard URL of a chain's entry in its file, its lines marked."""
    return f"/files/{quote(EXPERIENCE_FILE)}?hl={chain.start_line}-{chain.end_line}#L{chain.start_line}"
