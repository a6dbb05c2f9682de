"""The memory dashboard: what the agent remembers, what it was shown and why, in a browser.

Served by ``serve --transport http`` (and sse) at ``/`` beside ``/mcp``, behind the same
tokens, and by ``mcp-memory ui`` on a random loopback address with a fresh token. See
``docs/security.md`` for what it protects against on a shared machine. Server-rendered
HTML, a little JavaScript of its own, and no asset from anywhere else.

* ``app.py``: the routes on the SDK's Starlette app (``register_dashboard``), rendering, headers;
* ``auth.py``: tokens, sign-in sessions and codes, the sign-in cookie, CSRF, Host and Origin checks;
* ``links.py``: the one check of every return target (a path of this site, nothing else);
* ``serving.py``: security headers on every response, uvicorn run with an access log without queries;
* ``views.py``: what each page shows, filtered for the caller (private files, read-only tokens);
* ``render.py``: markdown as sanitized HTML with line anchors, highlighted matches;
* ``graph_svg.py``: experience chains drawn as SVG;
* ``ui.py``: ``mcp-memory ui``;
* ``templates/`` and ``static/``: Jinja2 pages, one stylesheet and one script.

Importing this package imports nothing heavy; ``app.py`` brings Jinja2 and the markdown tools.
"""
