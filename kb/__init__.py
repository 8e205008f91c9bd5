"""deploykb knowledge base: finding records, parsing, storage, embeddings, search and export.

Nothing here imports ``agent`` or typer, and nothing heavy happens at import time.
"""

__version__ = "0.1.0"
