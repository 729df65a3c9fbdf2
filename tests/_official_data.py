"""Build small datasets in the official Violin format (tests and benchmarks create their own).

The layout follows the authors' files (github.com/lihy715/Anonymous_Violin,
``parquet_to_violin_data.py`` and ``eval_closed_source/generate/*.py``):
a parquet with the columns ``task, id, mask_type, image_id, ground_truth,
image1_path, image2_path`` (images as the ``datasets`` Image struct
``{"bytes", "path"}``), ``metadata/Task_Color_Var1_metadata.csv`` (``id,
prompt``) and siblings, the converted ``data/Task_*`` folder, a Hugging
Face cache snapshot, and answers named ``id_<N:06d>.png`` in
``<model>_color_var1/``-style folders.

Every pixel is arithmetic on the row's parameters (no random generator), so
the same ``seed`` gives the same images with any numpy version.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

SIZE = 96
COLORS = [(190, 0, 50), (243, 132, 0), (0, 136, 86), (0, 103, 165), (154, 78, 174),
          (243, 195, 0), (132, 132, 130), (230, 143, 172), (40, 32, 34), (242, 243, 244)]
SHAPES = ("circle", "square", "triangle")
MASK_TYPES = ("inpainting", "outpainting", "random")
FOLDERS = {1: "Task_Color_Var1", 2: "Task_Color_Var2", 3: "Task_Geometric"}
META = {1: "Task_Color_Var1_metadata.csv", 2: "Task_Color_Var2_metadata.csv",
        3: "Task_Geometric_metadata.csv"}
ANSWER_FOLDERS = {1: "color_var1", 2: "color_var2", 3: "geometric"}


def png(rgb: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(rgb[:, :, ::-1]))
    assert ok
    return buf.tobytes()


def solid(color, size=SIZE):
    return np.broadcast_to(np.array(color, np.uint8), (size, size, 3)).copy()


def two_blocks(a, b, vertical: bool, size=SIZE):
    img = solid(a, size)
    if vertical:
        img[:, size // 2:] = b
    else:
        img[size // 2:, :] = b
    return img


def shape_image(kind: str, x0: int, y0: int, side: int, size=SIZE):
    """A white shape on black, drawn with integer arithmetic (OpenCV's rasterizers differ by release)."""
    y, x = np.mgrid[0:size, 0:size]
    inside_box = (x >= x0) & (x < x0 + side) & (y >= y0) & (y < y0 + side)
    if kind == "square":
        inside = inside_box
    elif kind == "circle":
        inside = (2 * x - 2 * x0 - side + 1) ** 2 + (2 * y - 2 * y0 - side + 1) ** 2 <= side * side
    else:  # apex at the top centre, base along the bottom of the box
        inside = inside_box & (np.abs(2 * (x - x0) - (side - 1)) <= y - y0 + 1)
    img = np.zeros((size, size, 3), np.uint8)
    img[inside] = 255
    return img


def photo(k: int, size=SIZE):
    y, x = np.mgrid[0:size, 0:size]
    r = 120 + (60 * np.sin((x + 7 * k) / 9.0)).astype(int)
    g = 110 + ((x * 3 + y * (k + 2)) % 90)
    b = 150 + (40 * np.cos((y - 3 * k) / 7.0)).astype(int)
    return np.clip(np.dstack([r, g, b]), 0, 255).astype(np.uint8)


def keep_mask(kind: str, k: int, size=SIZE):
    """uint8 0/255, 255 = keep."""
    keep = np.full((size, size), 255, np.uint8)
    if kind == "inpainting":
        c = size // 3 + k % 5
        keep[c:c + size // 3, c - 4:c + size // 3] = 0
    elif kind == "outpainting":
        # black bands along the right and bottom edges (an L). A black frame all round
        # would make the reference's leak > 0 even for the exact answer: its filled
        # outer contour of the black region is then the whole image
        keep[:, 3 * size // 5 + k % 4:] = 0
        keep[4 * size // 5 - k % 3:, :] = 0
    else:
        y, x = np.mgrid[0:size, 0:size]
        keep[(x - size // 2 - k % 7) ** 2 + (y - size // 2) ** 2 <= (size // 5) ** 2] = 0
        keep[5:26, 5:21 + k % 6] = 0
    return keep


@dataclass
class Row:
    task: int
    number: int
    prompt: str
    gt: np.ndarray
    mask_type: str = ""
    image_id: str = ""
    photo: np.ndarray | None = None
    mask: np.ndarray | None = None
    params: dict = field(default_factory=dict)


def make_rows(seed: int = 1, per_group: int = 2, inverted_masks: bool = False):
    rows = []
    n = 1
    for i in range(per_group):  # color var-1
        c = COLORS[(seed * 3 + i) % len(COLORS)]
        rows.append(Row(1, n, f"Generate a solid image of the colour rgb{c}, nothing else.",
                        solid(c), params={"color": c}))
        n += 1
    for i in range(per_group):  # color var-2
        a, b = COLORS[(seed + i) % len(COLORS)], COLORS[(seed + i + 4) % len(COLORS)]
        vertical = (i + seed) % 2 == 0
        where = "left half and the right half" if vertical else "top half and the bottom half"
        rows.append(Row(2, n, f"Split the image into the {where}: rgb{a} and rgb{b}.",
                        two_blocks(a, b, vertical), params={"colors": (a, b), "vertical": vertical}))
        n += 1
    for i in range(max(per_group, 3)):  # geometric, one of each class
        kind = SHAPES[(i + seed) % 3]
        side = 24 + 4 * ((i + seed) % 4)
        x0, y0 = 8 + 5 * i, 10 + 3 * seed
        rows.append(Row(3, n, f"Draw one solid white {kind} on a black background.",
                        shape_image(kind, x0, y0, side), params={"kind": kind, "x0": x0,
                                                                 "y0": y0, "side": side}))
        n += 1
    for mt in MASK_TYPES:  # image mask: ids restart per mask type, as the folders allow
        for i in range(per_group):
            k = seed * 10 + i
            src, keep = photo(k), keep_mask(mt, k)
            gt = src.copy()
            gt[keep == 0] = 0
            stored = 255 - keep if inverted_masks else keep
            rows.append(Row(4, 1 + i, "Keep the image where the mask is 1 and make every pixel "
                                      "where the mask is 0 pure black.", gt, mt,
                            f"img_{mt[:3]}_{k:04d}", src, np.dstack([stored] * 3)))
    return rows


def _struct(data: bytes | None):
    return None if data is None else {"bytes": data, "path": None}


def write_parquet(path: Path, rows, *, prompts_in_parquet=False, drop=(), row_group_size=None,
                  task_column="task"):
    import pyarrow as pa
    import pyarrow.parquet as pq

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    cols = {
        task_column: pa.array([r.task for r in rows], pa.int64()),
        "id": pa.array([f"id_{r.number}" for r in rows], pa.string()),
        "mask_type": pa.array([r.mask_type or None for r in rows], pa.string()),
        "image_id": pa.array([r.image_id or None for r in rows], pa.string()),
        "ground_truth": pa.array([_struct(png(r.gt)) for r in rows], image),
        "image1_path": pa.array([_struct(png(r.photo)) if r.photo is not None else None
                                 for r in rows], image),
        "image2_path": pa.array([_struct(png(r.mask)) if r.mask is not None else None
                                 for r in rows], image),
    }
    if prompts_in_parquet:
        cols["prompt"] = pa.array([r.prompt for r in rows], pa.string())
    for name in drop:
        cols.pop(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols), str(path), row_group_size=row_group_size)
    return path


def write_metadata(folder: Path, rows, *, skip_ids=()):
    folder.mkdir(parents=True, exist_ok=True)
    groups = {}
    for r in rows:
        key = r.task if r.task != 4 else r.mask_type
        groups.setdefault(key, []).append(r)
    for key, members in groups.items():
        if key in META:
            name, header = META[key], ["id", "prompt"]
        else:
            name, header = f"Task_Image_Mask_{key}_metadata.csv", ["id", "prompt", "image1_path",
                                                                  "image2_path"]
        with open(folder / name, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            for r in members:
                if (key, r.number) in skip_ids:
                    continue
                line = [r.number, r.prompt]
                if r.task == 4:
                    line += [f"benchmark/data/Task_Image_Mask_raw_image/images/{r.image_id}.png",
                             f"benchmark/data/Task_Image_Mask_raw_image/{key}_mask/{r.image_id}.png"]
                w.writerow(line)
    return folder


def write_converted(root: Path, rows):
    """The folder ``parquet_to_violin_data.py`` writes (``data/``) plus ``metadata/``."""
    data = root / "data"
    for r in rows:
        if r.task == 4:
            gt = data / "Task_Image_Mask" / r.mask_type / f"id_{r.number}.png"
            raw = data / "Task_Image_Mask_raw_image"
            for path, img in ((raw / "images" / f"{r.image_id}.png", r.photo),
                              (raw / f"{r.mask_type}_mask" / f"{r.image_id}.png", r.mask)):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(png(img))
        else:
            gt = data / FOLDERS[r.task] / f"id_{r.number}.png"
        gt.parent.mkdir(parents=True, exist_ok=True)
        gt.write_bytes(png(r.gt))
    write_metadata(root / "metadata", rows)
    return root


def write_hub_cache(cache: Path, repo: str, parquet: Path, metadata: Path,
                    commit: str = "0123456789abcdef0123456789abcdef01234567"):
    """A huggingface_hub cache holding one snapshot of a dataset repository (refs/main -> commit)."""
    repo_dir = cache / ("datasets--" + repo.replace("/", "--"))
    snap = repo_dir / "snapshots" / commit
    files = [(parquet, "violin-test.parquet")] + [
        (p, f"metadata/{p.name}") for p in sorted(metadata.iterdir())]
    for src, rel in files:
        data = src.read_bytes()
        blob = repo_dir / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        target = snap / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(Path("../" * (rel.count("/") + 2)) / "blobs" / blob.name)
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(commit)
    return commit


# ------------------------------------------------------------------ answers a wrong model gives
def wrong_answer(r: Row) -> np.ndarray:
    """Wrong colours, shifted shapes, unmasked photos."""
    if r.task == 1:
        return solid(tuple(255 - v for v in r.params["color"]))
    if r.task == 2:
        a, b = r.params["colors"]
        return two_blocks(b, a, r.params["vertical"])
    if r.task == 3:
        p = r.params
        return shape_image(p["kind"], p["x0"] + 11, p["y0"] + 6, p["side"] - 4)
    return r.photo.copy()


def rgba_answer(r: Row) -> np.ndarray:
    """The right picture, but half of it fully transparent with colour behind the alpha."""
    rgba = np.dstack([r.gt, np.full(r.gt.shape[:2], 255, np.uint8)])
    rgba[:, : SIZE // 2, 3] = 0
    rgba[:, : SIZE // 2, :3] = (250, 250, 250)
    return rgba


def answer_folder(root: Path, model: str, r: Row) -> Path:
    key = ANSWER_FOLDERS.get(r.task) or f"image_mask_{r.mask_type}"
    return root / f"{model}_{key}"


def write_answers(root: Path, rows, model: str, make, *, padded=True) -> dict:
    """Answers as the authors' generation scripts save them: ``<model>_<task>/id_<N:06d>.png``."""
    out = {}
    for r in rows:
        img = make(r)
        folder = answer_folder(root, model, r)
        folder.mkdir(parents=True, exist_ok=True)
        name = f"id_{r.number:06d}.png" if padded else f"id_{r.number}.png"
        if img.shape[2] == 4:
            ok, buf = cv2.imencode(".png", np.ascontiguousarray(img[:, :, [2, 1, 0, 3]]))
            data = buf.tobytes()
        else:
            data = png(img)
        (folder / name).write_bytes(data)
        out[(r.task, r.mask_type, r.number)] = folder / name
    return out
