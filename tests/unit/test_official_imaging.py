"""Reading images as the reference reads them (``reader="opencv"``, profile violin) or not.

The reference scripts read every file with ``cv2.imread(path)``; the
``opencv`` reader must give exactly those pixels (checked against cv2.imread
itself on the same files), while ``pillow`` keeps this package's own choices.
"""

from __future__ import annotations

import io
import threading

import cv2
import numpy as np
import pytest
from PIL import Image

from pytest_violin import imaging
from pytest_violin.errors import InvalidImageError
from pytest_violin.imaging import as_rgb8, current_reader, restore_reader, use_reader


def _imread_rgb(path):
    bgr = cv2.imread(str(path))
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _rgba_png(path):
    rgba = np.zeros((6, 8, 4), np.uint8)
    rgba[..., 0], rgba[..., 1], rgba[..., 2] = 200, 90, 30
    rgba[..., 3] = 255
    rgba[:, :4, 3] = 0  # transparent, with colour behind
    ok, buf = cv2.imencode(".png", rgba[:, :, [2, 1, 0, 3]])
    path.write_bytes(buf.tobytes())
    return rgba


def test_alpha_is_dropped_as_imread_drops_it_and_pillow_composites(tmp_path):
    path = tmp_path / "rgba.png"
    rgba = _rgba_png(path)
    ref = _imread_rgb(path)
    for obj in (path, str(path), path.read_bytes(), rgba, Image.open(path)):
        assert np.array_equal(as_rgb8(obj, reader="opencv"), ref)
    assert np.array_equal(ref, rgba[:, :, :3])
    composited = as_rgb8(path, reader="pillow")
    assert (composited[:, :4] == 0).all() and np.array_equal(composited[:, 4:], ref[:, 4:])


def test_sixteen_bit_is_truncated_as_imread_truncates(tmp_path):
    gray = np.array([[0, 255, 256, 511, 32767, 32768, 65535, 200 * 257 + 128]], np.uint16)
    rgb16 = np.dstack([gray, gray[:, ::-1], gray])
    for name, img in (("gray16.png", gray), ("rgb16.png", rgb16[:, :, ::-1])):
        path = tmp_path / name
        ok, buf = cv2.imencode(".png", img)
        path.write_bytes(buf.tobytes())
        ref = _imread_rgb(path)
        assert np.array_equal(as_rgb8(path, reader="opencv"), ref)
    assert np.array_equal(as_rgb8(gray, reader="opencv")[0, :, 0], (gray >> 8).astype(np.uint8)[0])
    assert as_rgb8(gray, reader="pillow")[0, 1, 0] == 1  # 255 / 65535 * 255, rounded


def test_cmyk_jpeg_palette_with_transparency_and_exif_rotation_as_imread(tmp_path):
    cmyk = Image.new("CMYK", (9, 5), (10, 200, 40, 30))
    cmyk.putpixel((1, 1), (250, 0, 0, 0))
    cmyk.save(tmp_path / "cmyk.jpg", quality=95)
    pal = Image.new("P", (4, 3), 0)
    pal.putpalette([255, 0, 0, 0, 255, 0] + [0] * 762)
    pal.putpixel((1, 1), 1)
    pal.save(tmp_path / "pal.png", transparency=0)
    rot = Image.new("RGB", (6, 2), (0, 0, 255))
    rot.putpixel((0, 0), (255, 255, 0))
    exif = rot.getexif()
    exif[0x0112] = 6
    rot.save(tmp_path / "rot.jpg", exif=exif.tobytes(), quality=100)
    for name in ("cmyk.jpg", "pal.png", "rot.jpg"):
        assert np.array_equal(as_rgb8(tmp_path / name, reader="opencv"),
                              _imread_rgb(tmp_path / name)), name


def test_the_default_is_pillow_and_use_reader_holds_until_its_token_is_given_back(tmp_path):
    path = tmp_path / "rgba.png"
    _rgba_png(path)
    assert current_reader() == "pillow"
    token = use_reader("opencv")
    try:
        assert current_reader() == "opencv"
        assert (as_rgb8(path)[:, :4] == (200, 90, 30)).all()
    finally:
        restore_reader(token)
    assert current_reader() == "pillow"
    assert (as_rgb8(path)[:, :4] == 0).all()
    with pytest.raises(InvalidImageError, match="cv2.*accepted: pillow, opencv"):
        use_reader("cv2")
    with pytest.raises(InvalidImageError, match="accepted: pillow, opencv"):
        as_rgb8(path, reader="imageio")


def test_a_reader_holds_in_the_threads_handed_its_context_only(tmp_path):
    from pytest_violin._threads import carried

    path = tmp_path / "rgba.png"
    _rgba_png(path)
    seen = {}
    token = use_reader("opencv")
    try:
        reads = {"carried": carried(lambda: as_rgb8(path)), "plain": lambda: as_rgb8(path)}
        threads = [threading.Thread(target=lambda name=name, read=read: seen.setdefault(name, read()))
                   for name, read in reads.items()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        restore_reader(token)
    assert (seen["carried"][:, :4] == (200, 90, 30)).all()  # the caller's reader: alpha dropped
    assert (seen["plain"][:, :4] == 0).all()  # a thread of its own: the default, composited over black


def test_a_render_is_found_only_by_the_reader_it_was_made_with():
    from pytest_violin.suite.sample import RenderCache

    cache, sample = RenderCache(4), object()
    image = cache.put(sample, np.zeros((2, 2, 3), np.uint8))
    token = use_reader("opencv")
    try:
        assert cache.get(sample) is None
    finally:
        restore_reader(token)
    assert cache.get(sample) is image


def test_the_bounds_hold_for_the_opencv_reader_too(tmp_path):
    big = Image.new("L", (1100, 1000))
    buf = io.BytesIO()
    big.save(buf, "PNG")
    with pytest.raises(InvalidImageError, match="over the limit of 1000000 pixels"):
        as_rgb8(buf.getvalue(), reader="opencv", max_pixels=1_000_000)
    with pytest.raises(InvalidImageError, match="over the limit of 1000 bytes"):
        as_rgb8(buf.getvalue(), reader="opencv", max_bytes=1000)
    with pytest.raises(InvalidImageError, match="not a recognised image format"):
        as_rgb8(b"GIF87a" + b"\0" * 40, reader="opencv")
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(InvalidImageError, match="empty"):
        as_rgb8(tmp_path / "empty.png", reader="opencv")
    assert imaging.READERS == ("pillow", "opencv")


def test_profile_violin_scores_a_file_as_the_reference_reads_it(tmp_path):
    from pytest_violin.suite import color_sample

    sample = color_sample("#C85A1E", width=8, height=6)
    path = tmp_path / "rgba.png"
    _rgba_png(path)  # (200, 90, 30) is #C85A1E; half of it transparent
    violin = sample.score(str(path), profile="violin")
    strict = sample.score(str(path), profile="strict")
    assert violin["rgb_ed"] < 0.01  # alpha dropped: the colour behind it counts
    assert strict["rgb_ed"] > 0.2   # composited over black: half the image black
