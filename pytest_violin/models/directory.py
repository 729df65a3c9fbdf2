"""The ``dir:PATH`` model: replay images saved earlier (the layout ``--violin-save-outputs`` writes).

``color/v1/pink/t03`` is ``PATH/color/v1/pink/t03.png`` (repeat ``k > 0``: ``t03.r<k>.png``). A sample of the
official data is also found where the authors' scripts save it: ``PATH/id_000123.png`` or ``PATH/id_123.png``,
or under ``PATH/<model>_color_var1/`` and its siblings.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import GenerationError, ModelSpecError

__all__ = ["ReplayAdapter", "create", "output_path", "saved_image"]


def output_path(root, sample_id: str, repeat: int = 0) -> Path:
    """Where ``--violin-save-outputs`` / ``dir:`` keep an image.

    ``ROOT/<sample id>.png`` for repeat 0, ``ROOT/<sample id>.r<k>.png`` for repeat ``k > 0``.
    """
    suffix = ".png" if repeat == 0 else f".r{int(repeat)}.png"
    return Path(root) / (sample_id + suffix)



#: The authors' answer folder suffix of each official group.
_AUTHOR_FOLDERS = {"color/v1": "_color_var1", "color/v2": "_color_var2", "shape": "_geometric"}


def _official_candidates(root: Path, sample_id: str) -> list:
    """Where the authors' scripts would have saved an official sample's answer."""
    from ..suite.official.schema import group_of_sample

    found = group_of_sample(sample_id)
    if found is None:
        return []
    group, number = found
    names = (f"id_{number:06d}.png", f"id_{number}.png")
    suffix = _AUTHOR_FOLDERS.get(group) or "_image_mask_" + group.split("/", 1)[-1]
    folders = [root] + sorted(p for p in root.glob(f"*{suffix}") if p.is_dir())
    return [folder / name for folder in folders for name in names]


def saved_image(root, sample_id: str, repeat: int = 0) -> Path:
    """The file holding a sample's saved answer: :func:`output_path`, else the authors' layout.

    For an official sample without a file at :func:`output_path`, the first of ``id_000123.png`` /
    ``id_123.png`` in ``root`` or its ``*_color_var1``-style folders; :func:`output_path` when none exists.

    Raises :class:`GenerationError`: answers for the sample in more than one of those folders.
    """
    root = Path(root)
    path = output_path(root, sample_id, repeat)
    if path.is_file() or repeat != 0:
        return path
    hits = [p for p in _official_candidates(root, sample_id) if p.is_file()]
    if len({p.parent for p in hits}) > 1:
        raise GenerationError(
            f"sample {sample_id!r}: answers in more than one folder "
            f"({', '.join(sorted(str(p) for p in hits)[:3])}); point dir: at one model's folders")
    return hits[0] if hits else path


class ReplayAdapter:
    """Read ``<root>/<sample id>.png``.

    * ``root``: an existing directory.
    """

    cacheable = False

    def __init__(self, root: Path):
        self.root = Path(root)
        self.identity = f"dir:{self.root}"

    def generate(self, request):
        """Return the bytes of the saved image of the request's sample."""
        path = saved_image(self.root, request.sample_id, getattr(request, "repeat", 0))
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
    """Factory for ``dir:PATH``, resolved like ``--violin-save-outputs`` (:attr:`AdapterOptions.spec_base`)."""
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
