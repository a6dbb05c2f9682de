"""Allocator settings for a long-running server process.

A server that stores memories for days must not keep growing. Two allocators held on to memory
the server had already freed; both are fixed here, once, as ``serve`` starts. Figures are from
``bench/load.py`` and a loop of write transactions; see docs/benchmarks.md.

Each setting yields to the environment variable that configures it, so an operator can still
choose otherwise.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform

log = logging.getLogger(__name__)

# glibc's mallopt parameter number for the mmap threshold (malloc.h: M_MMAP_THRESHOLD).
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 128 * 1024


def tune_for_long_running() -> list[str]:
    """Apply both settings; return what was changed, for the log and for tests."""
    changed = []
    if _use_system_allocator_for_arrow():
        changed.append("arrow buffers: system allocator")
    if _fix_malloc_mmap_threshold():
        changed.append(f"malloc: fixed mmap threshold of {MMAP_THRESHOLD_BYTES // 1024} KiB")
    if changed:
        log.debug("allocators: %s", "; ".join(changed))
    return changed


def _use_system_allocator_for_arrow() -> bool:
    """Give Arrow buffers to the C library's allocator.

    PyArrow's default pool (mimalloc) keeps the pages of freed buffers in per-thread heaps. Each
    store builds and drops a few Arrow tables on whichever worker thread serves it, and a
    server's resident memory grew by about 0.3 MB per store without levelling off (960 stores:
    1.57x). ``ARROW_DEFAULT_MEMORY_POOL`` in the environment wins.
    """
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return False
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    return True


def _fix_malloc_mmap_threshold() -> bool:
    """Keep glibc from moving large blocks into its per-thread arenas, where they stay.

    glibc serves blocks above the mmap threshold with their own mapping, returned on free. But
    when such a block is freed it raises the threshold to that block's size (up to 32 MB), so
    later blocks of that size come from an arena instead, and a thread's arena keeps its pages
    after the thread ends. Every keyword-index transaction starts a Tantivy writer with fresh
    threads that allocate and free megabyte-sized blocks: 50 transactions added 77 MB that never
    came back. Fixing the threshold (which turns the adjustment off) kept 600 transactions within
    1 MB. Only glibc has this knob; ``MALLOC_MMAP_THRESHOLD_`` in the environment wins.
    """
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") or platform.system() != "Linux":
        return False
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False
