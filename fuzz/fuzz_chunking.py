"""Fuzz target: markdown chunking keeps its promises on any input.

    python fuzz/fuzz_chunking.py -runs=200000          # libFuzzer options pass through
    python fuzz/fuzz_chunking.py -max_total_time=600 fuzz/corpus/chunking

Checked for every input: no exception; every non-blank line lies inside some chunk's line
range; ranges stay within the file; each chunk's text is made of the file's own lines.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from mcp_memory.core.chunking import chunk_markdown


def check(text: str, tokens: int, overlap: int) -> None:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.rstrip("\r") for line in lines]
    chunks = chunk_markdown(text, path="memory/fuzz.md", tokens=tokens, overlap=overlap)
    covered = set()
    for chunk in chunks:
        if not 1 <= chunk.start_line <= chunk.end_line <= max(len(lines), 1):
            raise AssertionError(f"range {chunk.start_line}-{chunk.end_line} outside 1..{len(lines)}")
        covered.update(range(chunk.start_line, chunk.end_line + 1))
        source = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        if chunk.text.strip() and chunk.text.strip() not in source:
            raise AssertionError(f"chunk text is not the file's lines {chunk.start_line}-{chunk.end_line}")
    for number, line in enumerate(lines, 1):
        if line.strip() and number not in covered:
            raise AssertionError(f"line {number} ({line[:40]!r}) is in no chunk")


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    tokens = fdp.ConsumeIntInRange(16, 256)
    overlap = fdp.ConsumeIntInRange(0, tokens - 1)
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes()).replace("\x00", "")
    check(text, tokens, overlap)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
