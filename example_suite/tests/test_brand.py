"""The team's own checks: brand colors, brand layouts and the app icon.

Each test asks the configured model (``violin_generate``) for one image and
asserts it with the team's helpers from ``acme_brand.py``.
"""

from __future__ import annotations

import pytest
from acme_brand import (BRAND, LAYOUTS, assert_brand_color, assert_brand_layout,
                        assert_logo_dot, brand_fill_sample, layout_sample, logo_dot_sample)

pytestmark = pytest.mark.brand


@pytest.mark.parametrize("name", sorted(BRAND))
def test_brand_color_fill(name, violin_generate):
    sample = brand_fill_sample(name)
    assert_brand_color(violin_generate(sample), name)


@pytest.mark.parametrize("template", [0, 5])
def test_brand_blue_survives_loose_and_strict_prompts(template, violin_generate):
    sample = brand_fill_sample("acme-blue", template=template)
    assert_brand_color(violin_generate(sample), "acme-blue")


@pytest.mark.parametrize("layout_name", sorted(LAYOUTS))
def test_brand_layout(layout_name, violin_generate):
    sample = layout_sample(layout_name)
    assert_brand_layout(violin_generate(sample), layout_name)


def test_app_icon(violin_generate):
    assert_logo_dot(violin_generate(logo_dot_sample()))
