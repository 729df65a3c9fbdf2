"""Image input and output at the edges of the package.

:func:`as_rgb8` is the one place where anything image-like becomes an
``(H, W, 3)`` ``uint8`` RGB array. Every metric, sample and adapter goes
through it, so the accepted inputs and the error messages are the same
everywhere. The pieces are internal, bottom to top:

* :mod:`._bounds`: the pixel and decoded-byte caps, header checks, the
  shared decode budget, regular-file opening, the one-line error;
  :func:`probe_image_file` (a file's header only).
* :mod:`._readers`: arrays, PIL images, bytes and files to RGB8, the
  package's way (alpha over black, 16 bits rounded, block by block) and as
  ``cv2.imread`` reads them (for profile ``violin``).
* :mod:`._convert`: :func:`as_rgb8`, :func:`decode_image`, the process-wide
  reader choice; PNG bytes, base64 PNG text and ``data:`` URIs; resizing.

Module-level state lives where it is read: the decode budget is
``_bounds._DECODE_BUDGET``, the block size ``_readers._BLOCK_PIXELS``
(replace them there, not here).
"""

from __future__ import annotations

from ._bounds import (
                      ACCEPTED_INPUTS,
                      DECODE_BUDGET_BYTES,
                      MAX_DECODED_BYTES,
                      MAX_PIXELS,
                      decoded_size,
                      file_kind,
                      probe_image_file,
)
from ._convert import (
                      RGB8,
                      READERS,
                      as_rgb8,
                      check_same_size,
                      current_reader,
                      decode_image,
                      encode_png,
                      png_base64,
                      png_data_uri,
                      resize_rgb8,
                      set_reader,
)

__all__ = ["RGB8", "MAX_PIXELS", "png_base64", "png_data_uri", "MAX_DECODED_BYTES", "DECODE_BUDGET_BYTES",
           "ACCEPTED_INPUTS", "as_rgb8", "decoded_size", "file_kind", "probe_image_file",
           "encode_png", "decode_image", "resize_rgb8", "check_same_size", "READERS", "set_reader",
           "current_reader"]
