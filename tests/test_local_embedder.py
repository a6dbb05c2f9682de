"""The default offline embedder: one copy of its weights per process, loaded on first use.

The server embeds queries on one BLAS thread and documents on all cores, through two models.
Each measurement runs in a fresh interpreter, since resident memory is a per-process figure.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_MEASURE = """
import json, threading
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
from mcp_memory.embedding.local import USEEmbedder
before = rss()
embedder = USEEmbedder()
constructed = rss() - before
threads = [threading.Thread(target=embedder.embed_query, args=("where do we deploy",)),
           threading.Thread(target=embedder.embed_documents, args=(["We deploy to Fly.io.", "Tea at four."],))]
for t in threads: t.start()
for t in threads: t.join()
used = rss() - before
query = embedder.embed_query("We deploy to Fly.io.")
document = embedder.embed_documents(["We deploy to Fly.io."])[0]
print(json.dumps({"constructed": constructed, "used": used, "cosine": float(query @ document)}))
"""


def test_queries_and_documents_share_one_copy_of_the_weights_loaded_on_first_use():
    out = subprocess.run([sys.executable, "-c", _MEASURE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    # Constructing is free (status and doctor never embed); one copy of the weights is about
    # 115 MB, two copies (as before) about 235 MB.
    assert figures["constructed"] < 20, figures
    assert figures["used"] < 175, figures
    # Both paths compute the same embedding for the same text.
    assert figures["cosine"] > 0.999, figures


_BATCH = """
import json, sys
import numpy as np
from mcp_memory.embedding.local import E5Embedder, USEEmbedder
texts = ["where do we deploy", "我们用哪个包管理器", "Tea at four.", "the staging cluster stays until the review"]
embedder = {"local": USEEmbedder, "e5": E5Embedder}[sys.argv[1]]()
batch = embedder.embed_queries(texts)
single = np.stack([embedder.embed_query(t) for t in texts])
print(json.dumps({"shape": list(batch.shape), "min_cosine": float(np.min(np.sum(batch * single, axis=1)))}))
"""


@pytest.mark.parametrize("provider", ["local", "e5"])
def test_a_batch_of_queries_embeds_each_as_a_single_query_would(provider):
    out = subprocess.run([sys.executable, "-c", _BATCH, provider], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert figures["shape"][0] == 4, figures
    assert figures["min_cosine"] > 0.999, figures
