"""The ``dir:PATH`` model: replay images saved earlier.

Sample ``color/v1/pink/t03`` is read from ``PATH/color/v1/pink/t03.png``
(repeat ``k > 0``: ``t03.r<k>.png``), the layout ``--violin-save-outputs``
writes. Record once on a GPU machine, gate in CPU-only CI.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import GenerationError, ModelSpecError

__all__ = ["ReplayAdapter", "create", "output_path"]


def output_path(root, sample_id: str, repeat: int = 0) -> Path:
    """Where ``--violin-save-outputs`` / ``dir:`` keep an image.

    ``ROOT/<sample id>.png`` for repeat 0, ``ROOT/<sample id>.r<k>.png``
    for repeat ``k > 0``.
    """
    suffix = ".png" if repeat == 0 else f".r{int(repeat)}.png"
    return Path(root) / (sample_id + suffix)



class ReplayAdapter:
    """Read ``<root>/<sample id>.png``.

    Parameters
    ----------
    root : pathlib.Path
        An existing directory.
    """

    cacheable = False

    def __init__(self, root: Path):
        self.root = Path(root)
        self.identity = f"dir:{self.root}"

    def generate(self, request):
        """Return the bytes of the saved image of the request's sample."""
        path = output_path(self.root, request.sample_id, getattr(request, "repeat", 0))
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise GenerationError(
                f"no saved image for sample {request.sample_id!r}: file {str(path)!r} does not exist"
            ) from None
        except OSError as exc:
            raise GenerationError(f"cannot read saved image {str(path)!r}: {exc}") from None

    def close(self) -> None:
        """Nothing to release."""


def create(target: str, options=None) -> ReplayAdapter:
    """Factory for ``dir:PATH``.

    A relative ``PATH`` resolves like ``--violin-save-outputs``: against the
    directory pytest was started in (the ini file's directory for a spec
    from the ini file), see :attr:`AdapterOptions.spec_base`.

    Raises
    ------
    ModelSpecError
        When ``PATH`` is empty, missing or not a directory.
    """
    if not target or not target.strip():
        raise ModelSpecError("model spec 'dir:' needs a directory; accepted: dir:PATH")
    path = Path(target.strip()).expanduser()
    if not path.is_absolute():
        base = options.spec_base if options is not None else Path.cwd()
        path = Path(base) / path
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise ModelSpecError(
            f"model spec 'dir:{target}': {str(path)!r} {what}; accepted: dir:PATH with PATH an "
            f"existing directory of <sample id>.png files (see --violin-save-outputs)"
        )
    return ReplayAdapter(path)
