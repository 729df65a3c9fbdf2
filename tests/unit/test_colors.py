"""Colors: the ISCC-NBS table and every notation."""

import colorsys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.errors import InvalidColorError
from pytest_violin.suite import ISCC_NBS_COLORS, format_color, parse_color

REFERENCE = "pytest_violin/data/iscc_nbs_level2.tsv"

rgb_st = st.tuples(*(st.integers(0, 255),) * 3)


def test_table_has_the_29_level2_colors_with_matching_hex():
    assert len(ISCC_NBS_COLORS) == 29
    assert len({c.slug for c in ISCC_NBS_COLORS}) == 29
    for c in ISCC_NBS_COLORS:
        r, g, b = c.rgb
        assert c.hex == f"#{r:02X}{g:02X}{b:02X}"
    byname = {c.name: c.rgb for c in ISCC_NBS_COLORS}
    assert byname["Yellow"] == (217, 180, 81)
    assert byname["Olive green"] == (62, 80, 31)


def test_names_parse_in_any_case_and_spacing():
    assert parse_color("Yellowish Pink") == (234, 154, 144)
    assert parse_color("  yellowish-pink ") == (234, 154, 144)
    assert parse_color("OLIVE green") == (62, 80, 31)


@pytest.mark.parametrize("text, rgb", [
    ("#D9B451", (217, 180, 81)), ("d9b451", (217, 180, 81)), ("#abc", (170, 187, 204)),
    ("rgb(217, 180, 81)", (217, 180, 81)), ("RGB( 0 ,0, 255 )", (0, 0, 255)),
    ("rgb(100%, 0%, 50%)", (255, 0, 128)), ("hsl(0, 100%, 50%)", (255, 0, 0)),
    ("hsl(120deg, 100%, 25%)", (0, 128, 0)), ("hsl(240, 100%, 50%)", (0, 0, 255)),
    ((1, 2, 3), (1, 2, 3)), ([255, 0, 7], (255, 0, 7)),
])
def test_notations_parse(text, rgb):
    assert parse_color(text) == rgb


@pytest.mark.parametrize("bad", [
    "#12345", "#GGGGGG", "rgb(256, 0, 0)", "rgb(1.5, 0, 0)", "hsl(0, 120%, 50%)",
    "not a color", "", (1, 2), (1, 2, 300), (1.5, 2, 3), None, 5, b"#ffffff", {"r": 1},
])
def test_bad_colors_name_the_value_and_the_accepted_forms(bad):
    with pytest.raises(InvalidColorError) as info:
        parse_color(bad)
    assert repr(bad) in str(info.value)
    assert "accepted" in str(info.value)
    assert isinstance(info.value, ValueError)


@settings(max_examples=60, deadline=None)
@given(rgb_st, st.sampled_from(["hex", "rgb", "hsl"]))
def test_every_notation_round_trips_exactly(rgb, notation):
    assert parse_color(format_color(rgb, notation)) == rgb


@settings(max_examples=40, deadline=None)
@given(rgb_st)
def test_hsl_text_agrees_with_colorsys(rgb):
    text = format_color(rgb, "hsl")
    inner = text[4:-1].replace("%", "").split(",")
    h, s, l = (float(v) for v in inner)
    r, g, b = colorsys.hls_to_rgb(h / 360.0, l / 100.0, s / 100.0)
    assert max(abs(r * 255 - rgb[0]), abs(g * 255 - rgb[1]), abs(b * 255 - rgb[2])) <= 0.5 + 1e-6


def test_name_notation_only_for_table_colors():
    assert format_color((217, 180, 81), "name") == "yellow"
    with pytest.raises(InvalidColorError, match="no ISCC-NBS"):
        format_color((1, 2, 3), "name")
    with pytest.raises(InvalidColorError, match="unknown color notation"):
        format_color((1, 2, 3), "cmyk")
