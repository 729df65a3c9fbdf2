"""Images of failing ``violin::`` items in the reports of pytest-html and Allure."""

from __future__ import annotations

import base64

import pytest

__all__ = ["ATTACHMENTS_PLUGIN", "ATTACHMENT_BUDGET", "MAX_SIDE", "ViolinAttachments", "active_targets",
           "register"]

#: Name under which the plugin object is registered.
ATTACHMENTS_PLUGIN = "violin-attachments"

#: Longest side of an attached image, in pixels (larger ones are shrunk, aspect kept).
MAX_SIDE = 1024

#: Bytes of images one process attaches at most (before base64).
ATTACHMENT_BUDGET = 64_000_000


def active_targets(config) -> tuple[bool, bool]:
    """``(html, allure)``: whether pytest-html and allure-pytest write a report in this run."""
    pm = config.pluginmanager
    html = bool(config.getoption("htmlpath", None)) and pm.has_plugin("html")
    allure = bool(config.getoption("allure_report_dir", None)) and pm.has_plugin("allure_pytest")
    return html, allure


def register(config) -> "ViolinAttachments | None":
    """Register the plugin when pytest-html or Allure is active; None (nothing imported) otherwise."""
    html, allure = active_targets(config)
    if not (html or allure):
        return None
    plugin = ViolinAttachments(html=html, allure=allure)
    config.pluginmanager.register(plugin, ATTACHMENTS_PLUGIN)
    return plugin


def _images(sample, images) -> list[tuple[str, bytes, str]]:
    """``[(name, bytes, mime type), ...]`` of one failing sample, in display order."""
    from ..imaging import as_rgb8
    from ..report.thumbnails import diff_heatmap, encode_image, thumbnail

    def encoded(name, image):
        return (name, *encode_image(thumbnail(image, MAX_SIDE), quality=90))

    out = []
    for name, image in zip(("source", "mask"), getattr(sample, "inputs", ()) or ()):
        out.append(encoded(f"{name} (input)", image))
    expected = as_rgb8(sample.expected())
    out.append(encoded("expected", expected))
    if images:
        generated = as_rgb8(images[0])
        out.append(encoded("generated", generated))
        side = min(MAX_SIDE, max(expected.shape[:2]))
        out.append(encoded("difference |generated - expected|", diff_heatmap(generated, expected, side)))
    return out


class ViolinAttachments:
    """Attach a failing sample's images to pytest-html's extras and Allure's attachments."""

    def __init__(self, *, html: bool, allure: bool, budget: int = ATTACHMENT_BUDGET):
        self.html = html
        self.allure = allure
        self.budget = int(budget)  # bytes this process may still attach
        self.left_out = 0  # failing items past the budget
        self._pending: dict[str, list] = {}  # sample id -> images, between scoring and the call report

    @pytest.hookimpl(trylast=True)
    def pytest_violin_sample_scored(self, config, sample, images, result):
        if not result.outcome.failing:
            return
        if self.budget <= 0:
            self._pending[sample.id] = []
            return
        try:
            pictures = _images(sample, images)
        except Exception as exc:  # an attachment must never fail a test
            result.extra["attachments_error"] = f"{type(exc).__name__}: {exc}"
            return
        size = sum(len(data) for _, data, _ in pictures)
        self.budget -= size
        self._pending[sample.id] = pictures if self.budget >= 0 else []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        sample = getattr(item, "violin_sample", None)
        if sample is None:
            return
        if call.when == "teardown":  # never kept past the item (an error, an interrupted call)
            self._pending.pop(sample.id, None)
            return
        if call.when != "call":
            return
        report = outcome.get_result()
        pictures = self._pending.pop(sample.id, None)
        if pictures is None or not report.failed:
            return
        if not pictures:
            self.left_out += 1
            if self.html:
                from pytest_html import extras
                report.extras = [*getattr(report, "extras", []), extras.text(
                    f"images left out: this process already attached {ATTACHMENT_BUDGET:,} bytes "
                    f"of images (pytest-violin's attachment budget)", "violin images")]
            return
        if self.html:
            from pytest_html import extras
            report.extras = [*getattr(report, "extras", []),
                             *((extras.png if mime == "image/png" else extras.jpg)(
                                 base64.b64encode(data).decode("ascii"), name)
                               for name, data, mime in pictures)]
        if self.allure:
            import allure
            for name, data, mime in pictures:
                kind = allure.attachment_type.PNG if mime == "image/png" else allure.attachment_type.JPG
                allure.attach(data, name=name, attachment_type=kind)
