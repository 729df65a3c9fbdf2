"""as_rgb8 under hostile inputs.

* bombs inside the pixel limit: the decoded size declared by the header is
  bounded (:data:`MAX_DECODED_BYTES`), and conversions work in row blocks,
  never making a full-size 32-bit or float copy (measured with
  ``tracemalloc``, which sees numpy's allocations);
* the row-block conversion gives exactly the pixels of the former
  whole-image arithmetic (a reference copy of it is kept below);
* files: FIFOs, devices, directories and ``/proc`` files are refused without
  blocking, and a bad file gives one line that never carries its bytes, in
  the message, a chained exception or a traceback frame.
"""

from __future__ import annotations

import io
import os
import struct
import sys
import threading
import tracemalloc
import zlib

import numpy as np
import pytest
from PIL import Image, ImageOps

from pytest_violin import imaging
from pytest_violin.errors import InvalidImageError
from pytest_violin.imaging import MAX_PIXELS, as_rgb8

RNG = np.random.default_rng(11)
SECRET = "TOKEN=planted-9c1e77a0b4"


def _chunk(tag: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + tag + data
            + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))


def _png_header(width: int, height: int, bit_depth: int, color_type: int) -> bytes:
    """A PNG whose header declares a size; its pixel data is a token few bytes."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + _chunk(b"IEND", b""))


def _encode(img: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


# ------------------------------------------------------- the former arithmetic

def _reference_array(arr: np.ndarray) -> np.ndarray:
    """as_rgb8 of an array before the row-block rewrite (whole-image copies)."""
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.dtype == np.uint8:
        out = arr
    elif arr.dtype == np.bool_:
        out = arr.astype(np.uint8) * 255
    elif arr.dtype == np.uint16:
        out = ((arr.astype(np.uint32) * 255 + 32767) // 65535).astype(np.uint8)
    else:
        out = np.rint(arr.astype(np.float64) * 255.0).astype(np.uint8)
    if out.ndim == 2:
        out = np.repeat(out[:, :, None], 3, axis=2)
    elif out.shape[2] == 4:
        alpha, rgb = out[:, :, 3], out[:, :, :3]
        if not (alpha == 255).all():
            a = alpha.astype(np.uint32)[:, :, None]
            out = ((rgb.astype(np.uint32) * a + 127) // 255).astype(np.uint8)
        else:
            out = rgb
    return np.ascontiguousarray(out)


def _reference_pil(img: Image.Image) -> np.ndarray:
    img = ImageOps.exif_transpose(img)
    mode = img.mode
    if mode.startswith("I;16"):
        arr = np.asarray(img).astype(np.uint16)
    elif mode == "I":
        arr = np.asarray(img).astype(np.uint16)
    elif mode == "F":
        arr = np.asarray(img, dtype=np.float32)
    elif mode in ("RGB", "L"):
        arr = np.asarray(img)
    elif "A" in mode or mode == "P" and "transparency" in img.info:
        arr = np.asarray(img.convert("RGBA"))
    else:
        arr = np.asarray(img.convert("RGB"))
    return _reference_array(arr)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of ~7 pixels, so a 13x9 image spans many blocks of unequal content."""
    monkeypatch.setattr(imaging, "_BLOCK_PIXELS", 7)  # read there, at call time
    assert imaging._rows_per_block(9) == 1     # the patch takes effect


def _arrays():
    h, w = 13, 9
    rgba = RNG.integers(0, 256, (h, w, 4), dtype=np.uint8)
    rgba[:6, :, 3] = 255                       # opaque blocks next to translucent ones
    rgba16 = RNG.integers(0, 65536, (h, w, 4), dtype=np.uint16)
    rgba16[:5, :, 3] = 65535
    unit = RNG.random((h, w, 4))
    unit[0, 0, 0], unit[-1, -1, 1] = 0.0, 1.0
    unit[:4, :, 3] = 1.0
    return {
        "u8-gray": RNG.integers(0, 256, (h, w), dtype=np.uint8),
        "u8-gray1": RNG.integers(0, 256, (h, w, 1), dtype=np.uint8),
        "u8-rgba": rgba,
        "u8-rgb-strided": RNG.integers(0, 256, (h, 2 * w, 3), dtype=np.uint8)[:, ::2],
        "u16-gray": RNG.integers(0, 65536, (h, w), dtype=np.uint16),
        "u16-rgb": RNG.integers(0, 65536, (h, w, 3), dtype=np.uint16),
        "u16-rgba": rgba16,
        "bool": RNG.random((h, w)) > 0.5,
        "bool-rgba": RNG.random((h, w, 4)) > 0.3,
        "f32-rgba": unit.astype(np.float32),
        "f64-rgb": unit[:, :, :3],
        "f16-gray": unit[:, :, 0].astype(np.float16),
        "f64-halves": np.full((h, w), 0.5 / 255 + 3 / 255),   # exact .5 ties: rint to even
    }


@pytest.mark.parametrize("name", sorted(_arrays()))
def test_row_blocks_give_the_former_pixels_for_arrays(small_blocks, name):
    arr = _arrays()[name]
    out = as_rgb8(arr)
    assert out.dtype == np.uint8 and out.flags.c_contiguous and out.shape == arr.shape[:2] + (3,)
    np.testing.assert_array_equal(out, _reference_array(arr))


def _pil_images():
    base = Image.fromarray(RNG.integers(0, 256, (13, 9, 3), dtype=np.uint8))
    rgba = Image.fromarray(np.dstack([np.asarray(base),
                                      RNG.integers(0, 256, (13, 9), dtype=np.uint8)]))
    pal = base.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    pal_t = pal.copy()
    pal_t.info["transparency"] = 3
    return {
        **{m: base.convert(m) for m in ("RGB", "L", "1", "CMYK", "YCbCr", "LAB", "HSV", "RGBX")},
        **{m: rgba.convert(m) for m in ("RGBA", "LA", "RGBa", "PA")},
        "P": pal, "P-transparency": pal_t,
        "I;16": Image.fromarray(RNG.integers(0, 65536, (13, 9), dtype=np.uint16)),
        "I;16B": Image.frombytes("I;16B", (9, 13), RNG.integers(0, 256, 234, np.uint8).tobytes()),
        "I": Image.fromarray(RNG.integers(0, 65536, (13, 9), dtype=np.int32), mode="I"),
        "F": Image.fromarray(RNG.random((13, 9)).astype(np.float32), mode="F"),
    }


@pytest.mark.parametrize("name", sorted(_pil_images()))
def test_row_blocks_give_the_former_pixels_for_pil_modes(small_blocks, name):
    img = _pil_images()[name]
    np.testing.assert_array_equal(as_rgb8(img), _reference_pil(img))


@pytest.mark.parametrize("name", ["RGB", "L", "1", "RGBA", "LA", "P", "P-transparency", "I;16"])
def test_row_blocks_give_the_former_pixels_for_encoded_png(small_blocks, name):
    data = _encode(_pil_images()[name])
    np.testing.assert_array_equal(as_rgb8(data), _reference_pil(Image.open(io.BytesIO(data))))


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_matches_pillow(small_blocks, orientation):
    img = Image.fromarray(RNG.integers(0, 256, (13, 9, 3), dtype=np.uint8))
    exif = Image.Exif()
    exif[0x0112] = orientation
    data = _encode(img, "PNG", exif=exif)
    reference = _reference_pil(Image.open(io.BytesIO(data)))
    np.testing.assert_array_equal(as_rgb8(data), reference)
    opened = Image.open(io.BytesIO(data))
    np.testing.assert_array_equal(as_rgb8(opened), reference)
    assert opened.getexif().get(0x0112) == orientation      # the caller's image is untouched


def test_float_range_error_names_the_range_of_the_whole_array(small_blocks):
    arr = np.full((13, 9), 0.5)
    arr[0, 0], arr[12, 8] = -0.25, 2.0
    with pytest.raises(InvalidImageError, match=r"found \[-0\.25, 2\]"):
        as_rgb8(arr)
    arr[12, 8] = np.nan
    with pytest.raises(InvalidImageError, match="NaN or infinite"):
        as_rgb8(arr)


def test_pil_32_bit_integer_out_of_range_is_refused(small_blocks):
    arr = np.zeros((13, 9), np.int32)
    arr[12, 8] = 70000
    with pytest.raises(InvalidImageError, match="outside 0..65535"):
        as_rgb8(Image.fromarray(arr, mode="I"))


# ------------------------------------------------------- bombs: decoded bytes

def test_16_bit_rgba_png_inside_the_pixel_limit_is_refused_from_its_header():
    bomb = _png_header(8192, 8192, 16, 6)        # 64 MP: passes MAX_PIXELS
    assert 8192 * 8192 <= MAX_PIXELS and len(bomb) < 200
    with pytest.raises(InvalidImageError) as info:
        as_rgb8(bomb)
    msg = str(info.value)
    assert f"decodes to {8192 * 8192 * 4 * 2} bytes" in msg, msg
    assert f"limit of {imaging.MAX_DECODED_BYTES} bytes" in msg and "8192x8192" in msg


@pytest.mark.parametrize("width, height, bit_depth, color_type, expected", [
    (3, 2, 16, 6, 3 * 2 * 4 * 2),     # 16-bit RGBA
    (3, 2, 8, 6, 3 * 2 * 4),          # 8-bit RGBA
    (3, 2, 16, 2, 3 * 2 * 3 * 2),     # 16-bit RGB
    (3, 2, 16, 0, 3 * 2 * 2),         # 16-bit gray
    (3, 2, 8, 0, 3 * 2),              # 8-bit gray
    (3, 2, 1, 0, 3 * 2),              # 1-bit gray: a byte per pixel once decoded
])
def test_decoded_size_reads_the_header(width, height, bit_depth, color_type, expected):
    img = Image.open(io.BytesIO(_png_header(width, height, bit_depth, color_type)))
    assert imaging.decoded_size(img) == expected


def test_decoded_size_limit_applies_to_bytes_paths_and_pil_images(tmp_path):
    img = Image.fromarray(RNG.integers(0, 65536, (5, 6), dtype=np.uint16))   # I;16: 60 bytes
    data = _encode(img)
    path = tmp_path / "a.png"
    path.write_bytes(data)
    for obj in (data, path, img, Image.open(path)):
        with pytest.raises(InvalidImageError, match="decodes to 60 bytes, over the limit of 59"):
            as_rgb8(obj, max_bytes=59)
        assert as_rgb8(obj, max_bytes=60).shape == (5, 6, 3)


@pytest.mark.parametrize("make", [
    lambda: np.full((2048, 2048, 4), 30000, np.uint16),
    lambda: np.full((2048, 2048, 4), 0.5, np.float32),
    lambda: Image.fromarray(np.full((2048, 2048, 4), 128, np.uint8)),
    lambda: Image.fromarray(np.full((2048, 2048), 0.5, np.float32), mode="F"),
], ids=["uint16-rgba", "float32-rgba", "pil-rgba", "pil-F"])
def test_conversion_makes_no_full_size_intermediate_copy(make):
    src = make()
    out_bytes = 2048 * 2048 * 3
    tracemalloc.start()
    try:
        out = as_rgb8(src)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.shape == (2048, 2048, 3)
    # the result plus a few blocks; a whole-image uint32 or float copy alone is >= 4x out_bytes / 3
    assert peak < out_bytes * 2.5, f"peak {peak / 2**20:.1f} MiB, result {out_bytes / 2**20:.0f} MiB"


# ------------------------------------------------------- files

def _no_secret_anywhere(exc: BaseException, secret: str) -> None:
    """Neither the message, a chained exception nor any traceback frame holds ``secret``."""
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)
    assert secret not in str(exc) and secret not in repr(exc.args)
    tb = exc.__traceback__
    while tb is not None:
        if "pytest_violin" not in tb.tb_frame.f_code.co_filename:
            tb = tb.tb_next
            continue
        for name, value in tb.tb_frame.f_locals.items():
            if isinstance(value, (bytes, bytearray, memoryview)):
                assert secret.encode() not in bytes(value), (tb.tb_frame.f_code.co_name, name)
            else:
                assert secret not in repr(value)[:100_000], (tb.tb_frame.f_code.co_name, name)
        tb = tb.tb_next


@pytest.mark.parametrize("content", [
    (SECRET + "\n").encode() * 50,                      # text
    b"\x89PNG\r\n\x1a\n" + (SECRET.encode() * 20),      # a PNG signature, then anything
    b"BM" + SECRET.encode() * 20,
])
def test_a_bad_image_file_never_carries_its_bytes(tmp_path, content):
    path = tmp_path / "expected.png"
    path.write_bytes(content)
    with pytest.raises(InvalidImageError) as info:
        as_rgb8(path)
    msg = str(info.value)
    assert str(path) in msg and "\n" not in msg
    _no_secret_anywhere(info.value, SECRET)


def test_decoder_messages_quoting_file_bytes_are_reduced_to_their_type():
    assert imaging._bounds._reason(SyntaxError("broken PNG file (chunk b'TOKE')")) == "SyntaxError"
    assert imaging._bounds._reason(OSError("bad\x00data")) == "OSError"
    assert imaging._bounds._reason(OSError("image file is truncated")) == "image file is truncated"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "x.png"
    os.mkfifo(fifo)
    result, done = {}, threading.Event()

    def read():
        try:
            as_rgb8(fifo)
        except InvalidImageError as exc:
            result["error"] = str(exc)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    if not done.wait(10):
        # unblock the reader stuck in open() so the test ends, then fail
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        done.wait(10)
        pytest.fail("as_rgb8 blocked on a FIFO")
    assert "a FIFO, not a regular file" in result["error"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc and /dev")
@pytest.mark.parametrize("path, fragment", [
    ("/proc/self/environ", "empty (0 bytes) or a special file"),
    ("/dev/null", "a character device, not a regular file"),
])
def test_special_files_are_refused(monkeypatch, path, fragment):
    monkeypatch.setenv("VIOLIN_PLANTED", SECRET)
    with pytest.raises(InvalidImageError) as info:
        as_rgb8(path)
    assert fragment in str(info.value) and path in str(info.value)
    _no_secret_anywhere(info.value, SECRET)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(InvalidImageError, match="a directory, not a regular file"):
        as_rgb8(tmp_path)


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.png"
    path.write_bytes(b"")
    with pytest.raises(InvalidImageError, match=r"empty \(0 bytes\)"):
        as_rgb8(path)


# ------------------------------------------------------- concurrent decodes share a budget

def test_budget_makes_a_second_reservation_wait_until_the_first_is_released():
    budget = imaging._bounds._Budget(100)
    first_in, release, second_in = threading.Event(), threading.Event(), threading.Event()

    def first():
        with budget.hold(70):
            first_in.set()
            release.wait(10)

    def second():
        with budget.hold(70):
            second_in.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_in.wait(10)
    threads[1].start()
    assert budget.waiting.wait(10)            # the second reservation is waiting...
    assert not second_in.is_set()             # ...and has not entered
    release.set()
    assert second_in.wait(10)
    for t in threads:
        t.join(10)
    assert budget.peak == 70 and budget.used == 0


def test_a_reservation_over_the_whole_budget_runs_alone():
    budget = imaging._bounds._Budget(100)
    with budget.hold(10**12):
        assert budget.used == 100
    with budget.hold(30), budget.hold(30):
        assert budget.used == 60


def test_concurrent_decodes_stay_within_the_budget(monkeypatch):
    img = Image.fromarray(RNG.integers(0, 256, (64, 64, 4), dtype=np.uint8))
    data = _encode(img)
    need = 64 * 64 * 4 + 64 * 64 * 3
    budget = imaging._bounds._Budget(2 * need + 1)           # room for two decodes at a time
    monkeypatch.setattr(imaging._bounds, "_DECODE_BUDGET", budget)  # both readers take it there
    expected = _reference_pil(img)
    errors = []

    def work():
        for _ in range(5):
            if not np.array_equal(as_rgb8(data), expected):
                errors.append("pixels differ")

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and budget.used == 0
    assert need <= budget.peak <= 2 * need + 1


def test_the_worst_accepted_image_reserves_less_than_the_budget():
    """64-megapixel 8-bit RGBA: Pillow's 256 MiB plus the 192 MiB result."""
    img = Image.open(io.BytesIO(_png_header(8192, 8192, 8, 6)))
    assert imaging._bounds._working_bytes(img) == 8192 * 8192 * 7 < imaging.DECODE_BUDGET_BYTES
