"""``--violin-batch``: the run's generations through the provider's batch API (see docs/models.md, "Batch").

Thin glue: :func:`configure` checks the option against the adapter (it must
offer ``batch_api()``; one process, no pytest-xdist) and fixes the run's
price per image (``--violin-price`` less the provider's batch discount);
:func:`start` hands the run's uncached requests to a
:class:`~pytest_violin.execution.batch.BatchDriver` before the first test
and gives the runner its :class:`~pytest_violin.execution._batch_answers.BatchAnswers`;
:func:`summary` says at the end what the provider completed, what is
still pending and how to collect it, and sets the exit code
:data:`EXIT_PENDING` when batches are still running and no sample failed.
"""

from __future__ import annotations

import pytest

from ..report.text import format_usd, printable

__all__ = ["EXIT_PENDING", "configure", "finish", "price_note", "report_section", "settled", "start", "summary"]

#: Exit code of a run that ended with batches still running (no sample failed): not green,
#: not a regression; the same command collects them. (pytest's own codes end at 6.)
EXIT_PENDING = 8


def configure(config, vs, adapter) -> None:
    """Validate ``--violin-batch`` against ``adapter``; set ``vs.batch_discount``.

    Raises
    ------
    pytest.UsageError
        When the adapter offers no batch API, or with pytest-xdist.
    """
    if not vs.settings.batch:
        return
    from ..models.batch import batch_api_of

    api = batch_api_of(adapter)
    if api is None:
        raise pytest.UsageError(
            f"--violin-batch: the adapter {printable(vs.identity)} offers no batch API; accepted: "
            f"openai:MODEL, gemini:MODEL, or an adapter with a batch_api() method (docs/models.md, Batch)")
    if getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        raise pytest.UsageError("--violin-batch runs in one process: the provider does the work; accepted: "
                                "--violin-batch without -n (pytest-xdist)")
    given = vs.settings.batch_discount
    vs.batch_discount = float(api.discount if given is None else given)
    vs.batch_name = printable(api.name)


def price_note(vs) -> str:
    """``"; the OpenAI Batch API's price: 50% off --violin-price=$0.04"`` in a batch run with a price, else ``""``."""
    discount, listed = vs.batch_discount, vs.settings.price
    if discount is None or listed is None:
        return ""
    return f"; the {vs.batch_name}'s price: {discount:.0%} off --violin-price={format_usd(listed)}"


def start(vs, samples) -> None:
    """Hand every uncached request of ``samples`` to a batch driver (in the order the tests need them)."""
    if vs.batch_discount is None or vs.batch is not None:
        return
    from dataclasses import replace
    from pathlib import Path

    from ..execution.batch import BatchDriver, Entry
    from ..execution._batch_answers import BatchAnswers
    from ..execution._batch_store import BatchStore, store_root
    from ..execution.cache import ImageCache, cache_identity
    from ..models.batch import batch_api_of
    from ..models.request import GenerationRequest, derive_seed

    config, s = vs.config, vs.settings
    adapter = vs.get_adapter()
    api = batch_api_of(adapter)
    cache = vs.make_cache()
    if cache is not None:
        root = store_root(cache.root)
    else:
        folder = getattr(config, "cache", None)
        root = (Path(folder.mkdir("violin-batches")) if folder is not None
                else Path(config.rootpath) / ".pytest_cache" / "violin-batches")
    identity = cache_identity(adapter, vs.identity) or vs.identity

    def key_of(request) -> str:
        return ImageCache.key(identity, request)

    entries = []
    for sample in {sample.id: sample for sample in samples}.values():
        first = GenerationRequest.from_sample(sample, base_seed=s.seed, repeat=0)
        for repeat in range(s.repeats):
            request = first if not repeat else replace(first, seed=derive_seed(s.seed, sample.id, repeat),
                                                       repeat=repeat)
            key = key_of(request)
            if cache is not None and cache.contains(key):
                continue
            entries.append(Entry(key, sample.id, f"{sample.id}#{repeat}", request))
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def note(line: str) -> None:
        if reporter is not None:
            reporter.write_line(printable(line))

    store = BatchStore(root, vs.identity)
    driver = BatchDriver(api, store, wait=s.batch_wait, cancel=vs.cancel,
                         usage=vs.usage, note=note, max_answer_bytes=s.max_answer_mb * 2**20,
                         admit=vs.admit, waves=vs.admit is not None)
    driver.plan(entries)
    if entries:
        note(f"violin batch: {len(entries)} uncached requests, {driver.planned} to submit to the {api.name}"
             f"{' in waves' if vs.admit is not None else ''}; records in {root}")
    vs.batch = driver
    vs.batch_answers = BatchAnswers(adapter, driver, key_of)
    driver.start()


def report_section(vs) -> dict | None:
    """The ``batch`` entry of results.json's metadata; None outside a batch run."""
    driver = vs.batch
    if driver is None:
        return None
    shown = (lambda text: None if text is None else printable(text))  # a provider's words, on a terminal later
    pending = [{"id": shown(r.id), "tag": shown(r.tag), "state": shown(r.provider_state or r.state),
                "requests": len(r.requests), "completed": r.completed, "total": r.total,
                "samples": sorted(shown(s) for s in r.samples.values())}
               for r in driver.pending()]
    return {"service": shown(driver.api.name), "discount": vs.batch_discount, "submitted": driver.submitted,
            "completed": driver.billed, "pending": pending, "stopped": shown(driver.stopped) if pending else None,
            "exit_code_when_pending": EXIT_PENDING}


def settled(vs, report) -> None:
    """A sample's test is over (its teardown report): its answer is no longer needed."""
    driver = vs.batch
    if report.when == "teardown" and driver is not None:
        sample_id = _sample_of(report.nodeid)
        if sample_id:
            driver.settled(sample_id)


def finish(vs, session) -> None:
    """The end of a batch run: batches still running and no sample failed: the pending exit code."""
    driver = vs.batch
    if driver is None:
        return
    driver.close()
    if driver.pending():
        failed = any(r.outcome.failing for r in vs.store.results)
        if not failed and int(session.exitstatus) in (0, 1):
            session.exitstatus = EXIT_PENDING


def summary(vs, terminalreporter) -> None:
    """What the provider completed for this run (the bill) and what is pending."""
    driver = vs.batch
    if driver is None:
        return
    def write(line: str, **style) -> None:
        terminalreporter.write_line(printable(line), **style)

    price, listed = vs.run_price(), vs.settings.price
    bill = f"violin batch: the {driver.api.name} completed {driver.billed} requests for this run"
    if price is not None:
        bill += (f", {format_usd(driver.billed * price)} at the batch price {format_usd(price)} per image "
                 f"({vs.batch_discount:.0%} off --violin-price={format_usd(listed)})")
    write(bill)
    pending = driver.pending()
    if pending:
        ids = ", ".join(r.id or r.tag for r in pending[:5])
        count = sum(len(r.requests) for r in pending)
        write(f"violin batch: PENDING: {count} requests still running in {len(pending)} batch"
              f"{'es' if len(pending) != 1 else ''} ({ids}{', ...' if len(pending) > 5 else ''}): "
              f"{driver.stopped}; run the same command again to collect them (nothing is submitted "
              f"twice; exit code {EXIT_PENDING})", yellow=True, bold=True)


def _sample_of(nodeid: str) -> str | None:
    if nodeid.startswith("violin::"):
        return nodeid[len("violin::"):]
    if nodeid.endswith("]") and "[" in nodeid:
        return nodeid[nodeid.index("[") + 1:-1]
    return None
