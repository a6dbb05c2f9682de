"""How the product's processes run and reach one another.

A memory kept warm in a long-running process (``service``), the warm process of a workspace
found or started (``warm``), the stdio front that carries a client's lines to it (``front``),
the loopback bridge hooks and fronts talk through (``bridge``), the stdio transport (``stdio``),
and the allocator settings of a long-running process (``allocators``).

May import: ``memory`` and everything below it. Never ``server``, ``clients``, ``dashboard`` or
``processes``, which build on it.
"""
