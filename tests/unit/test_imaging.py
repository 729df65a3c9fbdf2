"""as_rgb8: every accepted input kind and every rejection, with clear messages."""

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from pytest_violin.errors import ImageSizeMismatchError, InvalidImageError
from pytest_violin.imaging import (ACCEPTED_INPUTS, as_rgb8, check_same_size, decode_image,
                                   encode_png, resize_rgb8)

RNG = np.random.default_rng(7)
RGB = RNG.integers(0, 256, (5, 6, 3), dtype=np.uint8)


def _encode(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + tag + data
            + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))


def _png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares ``width`` x ``height`` gray pixels."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 16)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat)
            + _png_chunk(b"IEND", b""))


# ---------------------------------------------------------------- accepted

def test_rgb_uint8_is_returned_without_copy():
    out = as_rgb8(RGB)
    assert out is RGB or np.shares_memory(out, RGB)
    assert out.shape == (5, 6, 3) and out.dtype == np.uint8


@pytest.mark.parametrize("shape", [(5, 6), (5, 6, 1)])
def test_gray_arrays_are_replicated(shape):
    g = RNG.integers(0, 256, shape, dtype=np.uint8)
    out = as_rgb8(g)
    assert out.shape == (5, 6, 3)
    for c in range(3):
        np.testing.assert_array_equal(out[:, :, c], g.reshape(5, 6))


def test_rgba_is_composited_over_black():
    rgba = np.dstack([RGB, np.full((5, 6), 255, np.uint8)])
    np.testing.assert_array_equal(as_rgb8(rgba), RGB)
    rgba[0, 0, 3] = 0
    rgba[0, 1, 3] = 128
    out = as_rgb8(rgba)
    assert out[0, 0].tolist() == [0, 0, 0]
    np.testing.assert_array_equal(out[0, 1], (RGB[0, 1].astype(int) * 128 + 127) // 255)
    np.testing.assert_array_equal(out[1:], RGB[1:])


def test_uint16_is_rescaled():
    arr = np.array([[0, 65535, 257 * 100]], dtype=np.uint16)
    assert as_rgb8(arr)[0, :, 0].tolist() == [0, 255, 100]


def test_bool_maps_to_0_and_255():
    arr = np.array([[True, False]])
    assert as_rgb8(arr)[0, :, 0].tolist() == [255, 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_in_unit_range(dtype):
    arr = (RGB / 255.0).astype(dtype)
    np.testing.assert_array_equal(as_rgb8(arr), RGB)


@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA", "LA", "P", "I;16", "I", "F", "1", "CMYK"])
def test_pil_modes(mode):
    base = Image.fromarray(RGB)
    if mode in ("I;16", "I"):
        img = Image.fromarray(np.full((5, 6), 257 * 40, dtype=np.uint16))
        img = img if mode == "I;16" else img.convert("I")
        expected = np.full((5, 6, 3), 40, np.uint8)
    elif mode == "F":
        img = Image.fromarray(np.full((5, 6), 0.5, dtype=np.float32), mode="F")
        expected = np.full((5, 6, 3), 128, np.uint8)
    else:
        img = base.convert(mode)
        expected = np.asarray(img.convert("RGB"))
    out = as_rgb8(img)
    assert out.shape == (5, 6, 3) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, expected)


def test_pil_p_with_transparency_is_composited():
    img = Image.new("P", (2, 1))
    img.putpalette([255, 0, 0, 0, 255, 0] + [0] * 762)
    img.putdata([0, 1])
    img.info["transparency"] = 0
    assert as_rgb8(img).tolist() == [[[0, 0, 0], [0, 255, 0]]]


@pytest.mark.parametrize("fmt,kw,lossless", [("PNG", {}, True), ("WEBP", {"lossless": True}, True),
                                             ("JPEG", {"quality": 95}, False)])
def test_encoded_bytes(fmt, kw, lossless):
    data = _encode(Image.fromarray(RGB), fmt, **kw)
    for obj in (data, bytearray(data), memoryview(data)):
        out = as_rgb8(obj)
        assert out.shape == (5, 6, 3)
        if lossless:
            np.testing.assert_array_equal(out, RGB)
    np.testing.assert_array_equal(decode_image(data), as_rgb8(data))


def test_paths_str_and_pathlike(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(encode_png(RGB))
    np.testing.assert_array_equal(as_rgb8(path), RGB)
    np.testing.assert_array_equal(as_rgb8(str(path)), RGB)


def test_encode_png_roundtrip_and_resize():
    np.testing.assert_array_equal(as_rgb8(encode_png(RGB)), RGB)
    assert resize_rgb8(RGB, 6, 5) is RGB
    assert resize_rgb8(RGB, 3, 2).shape == (2, 3, 3)
    assert resize_rgb8(RGB, 12, 10).shape == (10, 12, 3)


# ---------------------------------------------------------------- rejected

def _rejects(obj, *fragments, **kw):
    with pytest.raises(InvalidImageError) as info:
        as_rgb8(obj, **kw)
    msg = str(info.value)
    assert "accepted:" in msg and ACCEPTED_INPUTS in msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    assert isinstance(info.value, ValueError)
    return msg


@pytest.mark.parametrize("obj,fragment", [
    (None, "NoneType None"), (42, "int 42"), ([[1, 2]], "list"), ({"a": 1}, "dict")])
def test_unsupported_types(obj, fragment):
    _rejects(obj, "unsupported input type", fragment)


@pytest.mark.parametrize("shape", [(0, 4, 3), (4, 0), (0, 0)])
def test_empty_arrays(shape):
    _rejects(np.zeros(shape, np.uint8), "empty image", str(shape))


@pytest.mark.parametrize("shape", [(4,), (2, 2, 2), (2, 2, 5), (1, 2, 2, 3)])
def test_wrong_shapes(shape):
    _rejects(np.zeros(shape, np.uint8), "unsupported array shape")


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_floats(value):
    arr = np.zeros((2, 2), np.float64)
    arr[1, 1] = value
    _rejects(arr, "NaN or infinite", "float64")


@pytest.mark.parametrize("value", [-0.01, 1.5, 255.0])
def test_float_out_of_range(value):
    arr = np.zeros((2, 2), np.float32)
    arr[0, 0] = value
    _rejects(arr, "must lie in [0, 1]")


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.complex64, object])
def test_unsupported_dtypes(dtype):
    _rejects(np.zeros((2, 2), dtype=dtype), "unsupported dtype")


def test_zero_bytes():
    _rejects(b"", "zero bytes", "0 bytes")


def test_garbage_bytes():
    _rejects(b"definitely not an image", "not a recognised image format", "23 bytes")


def test_truncated_png():
    data = _encode(Image.fromarray(RNG.integers(0, 256, (64, 64, 3), dtype=np.uint8)), "PNG")
    _rejects(data[: len(data) // 2], "truncated or corrupt")


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.png"
    _rejects(missing, "no such file", str(missing))
    _rejects(str(missing), "no such file")


def test_directory_is_not_readable(tmp_path):
    _rejects(tmp_path, "could not be read")


def test_decompression_bomb_header_is_refused_before_decoding():
    bomb = _png_declaring(100_000, 100_000)
    assert len(bomb) < 200
    _rejects(bomb, "decompression bomb")


def test_max_pixels_applies_to_every_input_kind():
    data = encode_png(RGB)
    for obj in (RGB, Image.fromarray(RGB), data):
        _rejects(obj, "over the limit of 29 pixels", "6x5 = 30 pixels", max_pixels=29)
    assert as_rgb8(RGB, max_pixels=30).shape == (5, 6, 3)


def test_check_same_size_names_both_shapes():
    with pytest.raises(ImageSizeMismatchError, match=r"\(5, 6, 3\).*\(4, 6, 3\)"):
        check_same_size(RGB, RGB[:4])
    check_same_size(RGB, RGB.copy())
