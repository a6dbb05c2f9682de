"""The memory dashboard: what the agent remembers, what it was shown and why, in a browser.

Served by ``serve --transport http`` (and sse) at ``/`` beside ``/mcp``, behind the same
tokens, and by ``mcp-memory ui`` on a loopback port with a fresh token. Server-rendered
HTML, a little JavaScript of its own, and no asset from anywhere else.

* ``app.py``: the routes on the SDK's Starlette app (``register_dashboard``), rendering, headers;
* ``auth.py``: tokens, the sign-in cookie, CSRF, Host and Origin checks;
* ``views.py``: what each page shows, filtered for the caller (private files, read-only tokens);
* ``render.py``: markdown as sanitized HTML with line anchors, highlighted matches;
* ``graph_svg.py``: experience chains drawn as SVG;
* ``ui.py``: ``mcp-memory ui``;
* ``templates/`` and ``static/``: Jinja2 pages, one stylesheet and one script.

Importing this package imports nothing heavy; ``app.py`` brings Jinja2 and the markdown tools.
"""
