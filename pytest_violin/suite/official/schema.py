"""What the official Violin data looks like: columns, task numbers, folders, ids.

Facts from the authors' converter ``parquet_to_violin_data.py`` (github.com/lihy715/Anonymous_Violin, the
earlier anonymous release of github.com/AI-Obedience/Violin) and their generation scripts
(``eval_closed_source/generate/generate_*_task.py``):

* the parquet (``violin-test.parquet``) has the columns ``task`` (or ``variation`` when ``task`` is empty: 1
  color var-1, 2 color var-2, 3 geometric, 4 image mask), ``id`` (``id_<N>``), ``mask_type`` (``inpainting`` /
  ``outpainting`` / ``random``; empty means ``inpainting``), ``image_id``, and the images ``ground_truth``,
  ``image1_path`` (mask task: the photo) and ``image2_path`` (mask task: the mask), each a ``{"bytes": ...}``
  struct (the ``datasets`` Image feature) or a path;
* the converter writes ``Task_Color_Var1/id_N.png``, ``Task_Color_Var2/``, ``Task_Geometric/``,
  ``Task_Image_Mask/<mask_type>/id_N.png``, ``Task_Image_Mask_raw_image/images/<image_id>.(png|jpg)`` and
  ``Task_Image_Mask_raw_image/<mask_type>_mask/<image_id>.png``;
* the prompts live in ``metadata/*.csv`` (``id, prompt``; the mask files add ``image1_path, image2_path``);
  the generation scripts read ``Task_Color_Var1_metadata.csv``, ``Task_Color_Var2_metadata.csv``,
  ``Task_Geometric_metadata.csv`` and ``Task_Image_Mask_<type>_metadata.csv`` and save answers as ``id_<N
  zero-padded to 6>.png``.
"""

from __future__ import annotations

import re

__all__ = ["TASK_NUMBERS", "MASK_TYPES", "MASK_VARIATIONS", "GT_FOLDERS", "RAW_FOLDER", "IMAGE_COLUMNS",
           "parse_number", "group_of", "sample_id", "gt_folder", "group_of_sample", "MAX_CELL_BYTES",
           "MAX_PROMPT_CHARS", "MAX_TEXT_CELL_CHARS", "METADATA_NAMES", "metadata_name"]

#: ``task`` value -> (plugin task, variation or None when read per row).
TASK_NUMBERS = {1: ("color", "v1"), 2: ("color", "v2"), 3: ("shape", None), 4: ("mask", None)}
#: The official mask types, in the converter's spelling.
MASK_TYPES = ("inpainting", "outpainting", "random")
#: Official mask type -> the plugin's variation.
MASK_VARIATIONS = {"inpainting": "inpaint", "outpainting": "outpaint", "random": "random"}
#: Ground-truth folder of each group (``color/v1``, ``shape``, ``mask/<type>``).
GT_FOLDERS = {"color/v1": "Task_Color_Var1", "color/v2": "Task_Color_Var2",
              "shape": "Task_Geometric"}
RAW_FOLDER = "Task_Image_Mask_raw_image"
#: The image columns of the parquet.
IMAGE_COLUMNS = ("ground_truth", "image1_path", "image2_path")
#: Largest image cell (or file) read, in bytes: 64 MiB.
MAX_CELL_BYTES = 64 * 1024 * 1024
#: Longest prompt, in characters (the paper's prompts are one or two sentences; a megabyte prompt would be
#: copied into every report, index and request).
MAX_PROMPT_CHARS = 4000
#: Longest ``task``, ``id``, ``mask_type`` or ``image_id`` cell, in characters.
MAX_TEXT_CELL_CHARS = 256
#: The metadata CSV each group's prompts are read from, as the authors' generation scripts name it (other
#: spellings are recognised: :func:`.metadata.classify`).
METADATA_NAMES = {"color/v1": "Task_Color_Var1_metadata.csv",
                  "color/v2": "Task_Color_Var2_metadata.csv",
                  "shape": "Task_Geometric_metadata.csv"}

_NUMBER = re.compile(r"(?:id_)?(\d{1,9})")


def parse_number(value) -> int | None:
    """``id_123``, ``123``, ``id_000123`` or ``123.0`` -> 123; anything else -> None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        return int(value) if value.is_integer() and value >= 0 else None
    text = str(value).strip()
    if text.endswith(".0"):
        text = text[:-2]
    m = _NUMBER.fullmatch(text)
    return int(m.group(1)) if m else None


def group_of(task: int, mask_type: str | None) -> str:
    """``color/v1``, ``color/v2``, ``shape`` or ``mask/<mask_type>``."""
    plugin_task, variation = TASK_NUMBERS[task]
    if plugin_task == "mask":
        return f"mask/{mask_type}"
    return f"{plugin_task}/{variation}" if variation else plugin_task


def sample_id(group: str, number: int) -> str:
    """``official/color/v1/id_123``, ``official/shape/id_7``, ``official/mask/inpainting/id_42``."""
    return f"official/{group}/id_{number}"


def group_of_sample(sid: str) -> tuple[str, int] | None:
    """Inverse of :func:`sample_id`: ``(group, number)`` or None."""
    m = re.fullmatch(r"official/(.+)/id_(\d+)", sid)
    return (m.group(1), int(m.group(2))) if m else None


def metadata_name(group: str) -> str:
    """``Task_Color_Var1_metadata.csv``, ..., ``Task_Image_Mask_<mask_type>_metadata.csv``."""
    if group.startswith("mask/"):
        return f"Task_Image_Mask_{group.split('/', 1)[1]}_metadata.csv"
    return METADATA_NAMES[group]


def gt_folder(group: str) -> str:
    """The converter's ground-truth folder of a group (relative to ``data/``)."""
    if group.startswith("mask/"):
        return f"Task_Image_Mask/{group.split('/', 1)[1]}"
    return GT_FOLDERS[group]
