"""Reports of a Violin run: the terminal summary (and, from other modules, files)."""

__all__: list[str] = []
