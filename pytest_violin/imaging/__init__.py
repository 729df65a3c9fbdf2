"""Image input and output at the edges of the package.

:func:`as_rgb8` is the one place where anything image-like becomes an
``(H, W, 3)`` ``uint8`` RGB array. Every metric, sample and adapter goes
through it, so the accepted inputs and the error messages are the same
everywhere. The pieces, bottom to top:

* :mod:`.bounds`: the pixel and decoded-byte caps, header checks, the
  shared decode budget, regular-file opening, the one-line error;
  :func:`probe_image_file` (a file's header only).
* :mod:`.pillow_reader`: arrays, PIL images, bytes and files to RGB8 with
  this package's choices (alpha over black, 16 bits rounded), block by block.
* :mod:`.opencv_reader`: the same inputs read as ``cv2.imread`` reads them
  (alpha dropped, 16 bits truncated, CMYK by OpenCV), for profile ``violin``.
* :mod:`.decode`: :func:`as_rgb8` and :func:`decode_image`, and the
  process-wide reader choice (:func:`set_reader`, :func:`current_reader`).
* :mod:`.encode`: PNG bytes, base64 PNG text and ``data:`` URIs.
* :mod:`.resize`: :func:`resize_rgb8` and :func:`check_same_size`.

Module-level state lives where it is read: the decode budget is
``bounds._DECODE_BUDGET``, the block size ``pillow_reader._BLOCK_PIXELS``
(replace them there, not here).
"""

from __future__ import annotations

# _Budget, _reason and _working_bytes: private, re-exported for the tests that check them
from .bounds import (ACCEPTED_INPUTS, DECODE_BUDGET_BYTES, MAX_DECODED_BYTES, MAX_PIXELS, _Budget,
                     _reason, _working_bytes, decoded_size, file_kind, probe_image_file)
from .decode import READERS, RGB8, as_rgb8, current_reader, decode_image, set_reader
from .encode import encode_png, png_base64, png_data_uri
from .resize import check_same_size, resize_rgb8

__all__ = [
    "RGB8",
    "MAX_PIXELS",
    "png_base64",
    "png_data_uri",
    "MAX_DECODED_BYTES",
    "DECODE_BUDGET_BYTES",
    "ACCEPTED_INPUTS",
    "as_rgb8",
    "decoded_size",
    "file_kind",
    "probe_image_file",
    "encode_png",
    "decode_image",
    "resize_rgb8",
    "check_same_size",
    "READERS",
    "set_reader",
    "current_reader",
]
