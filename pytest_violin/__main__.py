"""Command line: ``python -m pytest_violin export|list|sheet|compare|trend|batch|merge|gate`` (``--help`` on
each).

``export`` writes a suite's ``manifest.jsonl`` and PNGs, ``list`` prints its sample counts per task and
variation, ``sheet`` draws a contact sheet, ``compare`` compares runs side by side (and with the paper's
published rows) in the paper's layout, ``trend`` follows task means and pass rates across runs in the order
given (checkpoints, releases) as text, Markdown, CSV or an HTML page of charts; ``batch list`` shows the provider
batches this project submitted (``--violin-batch``; with ``--model SPEC`` also their state at the provider) and
``batch cancel [ID ...] --model SPEC`` cancels them (every running one without an ID; only batches this project
recorded). ``merge RUN... --output DIR [--save-baseline FILE]`` puts the report
folders of the shards of one run (``--violin-shard=K/N``) back together: one results.json, report.html,
summary.md (and baseline) as one run writes them. ``gate RUN --baseline FILE [--report DIR]`` decides a run's
report folder (a merged one) against a baseline with the plugin's gate (``gating.decide``) and exit statuses;
with ``--report`` it writes the run's reports with the gate's verdict and table into DIR.

Exit status (pytest's numbers, so a script treats both alike):

* 0: done;
* 1: the command could not finish: an output could not be written (an ``OSError``: disk full, no permission)
  or an internal error; ``gate``: the model got worse, a sample of the run ended in an error, or a task or
  variation was not shown within its margins, as the plugin's ``--violin-baseline`` fails a session;
* 4: usage error: a bad argument or option, or input that is not accepted (a RUN that does not exist or is not
  a run, runs that cannot be compared, shards that are not the parts of one run, a suite or manifest that does
  not load); ``gate``: the run shares too few samples with the baseline to decide; one line names the value
  and what is accepted;
* 141: standard output was closed before the command finished writing (``gate ... | head``): the command stops
  there without a message, with the status a shell gives a program SIGPIPE ended (128 + 13), so a pipeline
  under ``set -o pipefail`` does not take an unfinished command (a gate not decided) for a success.
* 130: interrupted (Ctrl-C), the shell's number for it: one line says so, no traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

from .errors import ViolinError

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_INTERRUPTED", "EXIT_PIPE"]

#: Exit statuses (module docstring): pytest's OK, TESTS_FAILED and USAGE_ERROR.
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 4
#: Exit status after Ctrl-C: the shell's for a command ended by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130
#: Standard output closed early (a pipe to ``head``): a shell's status for a program SIGPIPE ended.
EXIT_PIPE = 128 + 13


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors exit :data:`EXIT_USAGE` (argparse's own is 2).

    Sub-commands' parsers are of this class too (``add_subparsers`` makes them with the parent's class), so
    each prints its own usage.
    """

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m pytest_violin``."""
    from .suite import SUITES
    from .suite.sample import TASKS

    parser = _Parser(prog="python -m pytest_violin",
                     description="Violin suites: export and inspect samples.")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{export,list,sheet,compare,trend,batch,merge,gate}")

    def add_source(p):
        p.add_argument("--suite", default="violin", metavar="NAME|PATH",
                       help=f"built-in suite ({', '.join(SUITES)}) or a manifest file/folder "
                            f"(default: violin)")
        p.add_argument("--tasks", nargs="+", choices=TASKS, metavar="TASK",
                       help=f"keep only these tasks ({', '.join(TASKS)})")
        p.add_argument("--limit", type=_positive_int, metavar="N",
                       help="stratified subset of at most N samples")
        p.add_argument("--seed", type=int, default=0, help="which subset --limit draws")
        p.add_argument("--photos-dir", metavar="DIR",
                       help="your own base photographs for the mask task "
                            "(default: $VIOLIN_PHOTOS_DIR or scikit-image's)")

    ex = sub.add_parser("export", help="write manifest.jsonl and PNGs of a suite")
    ex.set_defaults(command_parser=ex)
    ex.add_argument("out_dir", metavar="OUT_DIR")
    add_source(ex)
    ex.add_argument("--no-progress", action="store_true", help="no progress bar")
    ex.add_argument("--compression", type=int, default=1, choices=range(10), metavar="0-9",
                    help="PNG zlib level (default 1)")

    ls = sub.add_parser("list", help="print sample counts per task and variation")
    ls.set_defaults(command_parser=ls)
    add_source(ls)

    sh = sub.add_parser("sheet", help="draw a contact sheet PNG of expected images")
    sh.set_defaults(command_parser=sh)
    sh.add_argument("out_png", metavar="OUT_PNG")
    add_source(sh)
    sh.add_argument("--columns", type=_positive_int, default=10)

    cmp = sub.add_parser("compare", help="compare runs side by side (and with the paper)")
    cmp.set_defaults(command_parser=cmp)
    cmp.add_argument("runs", nargs="+", metavar="RUN",
                     help="a --violin-report folder or results.json, a baseline file, or "
                          "dir:FOLDER of saved images (with --suite)")
    cmp.add_argument("--label", action="append", default=[], metavar="L",
                     help="label of the n-th RUN (repeat; default the label evaluate() saved "
                          "in it, else the adapter recorded in it)")
    cmp.add_argument("--paper", action="store_true",
                     help="add the paper's published rows (Tables 1, 2, 3 and 7)")
    cmp.add_argument("--format", default="terminal", choices=COMPARE_FORMATS,
                     help="output format (default terminal; html needs --output)")
    cmp.add_argument("--output", metavar="FILE", help="write to FILE instead of stdout")
    cmp.add_argument("--all-samples", action="store_true",
                     help="compare every run on all its samples, not only those every run holds")
    cmp.add_argument("--allow-mismatch", action="store_true",
                     help="compare runs whose suite fingerprint, profile or package version differ")
    cmp.add_argument("--suite", metavar="NAME|PATH",
                     help="the suite of dir: runs (built-in name or manifest)")
    cmp.add_argument("--no-progress", action="store_true", help="no progress bar for dir: runs")
    cmp.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    bat = sub.add_parser("batch", help="show or cancel the provider batches this project submitted")
    bat.add_argument("action", choices=("list", "cancel"))
    bat.add_argument("ids", nargs="*", metavar="ID", help="batch ids to cancel (default: every running one)")
    bat.add_argument("--model", help="the adapter (as --violin-model): needed to ask the provider")
    bat.add_argument("--cache-dir", help="the --violin-cache-dir of the runs (default: .pytest_cache)")
    bat.set_defaults(command_parser=bat)

    tr = sub.add_parser("trend", help="task means and pass rates across runs (checkpoints, releases)")
    tr.set_defaults(command_parser=tr)
    tr.add_argument("runs", nargs="+", metavar="RUN",
                    help="a --violin-report folder (or one evaluate()'s run.save wrote), a results.json "
                         "or a baseline file, oldest first")
    tr.add_argument("--label", action="append", default=[], metavar="L",
                    help="label of the n-th RUN (repeat; default the label evaluate() saved "
                         "in it, else the adapter recorded in it)")
    paper = tr.add_mutually_exclusive_group()
    paper.add_argument("--paper", dest="paper", action="store_true", default=None,
                       help="draw the paper's models as reference lines (default: when every run is on "
                            "the official data)")
    paper.add_argument("--no-paper", dest="paper", action="store_false", help="no reference lines")
    tr.add_argument("--format", default="terminal", choices=TREND_FORMATS,
                    help="output format (default terminal; html needs --output)")
    tr.add_argument("--output", metavar="FILE", help="write to FILE instead of stdout")

    mg = sub.add_parser("merge", help="merge the report folders of a run's shards (--violin-shard)")
    mg.set_defaults(command_parser=mg)
    mg.add_argument("runs", nargs="+", metavar="RUN",
                    help="the --violin-report folder (or results.json) of each shard, in any order")
    mg.add_argument("--output", required=True, metavar="DIR",
                    help="folder of the merged results.json, report.html and summary.md")
    mg.add_argument("--save-baseline", metavar="FILE", help="also write the merged run's baseline")
    mg.add_argument("--no-step-summary", action="store_true",
                    help="do not append summary.md to $GITHUB_STEP_SUMMARY (when 'gate --report' does)")

    pl = sub.add_parser("plan", help="the samples each task and variation needs to be shown within its margins")
    pl.set_defaults(command_parser=pl)
    pl.add_argument("--baseline", required=True, metavar="FILE", help="the baseline the runs will be gated against")
    pl.add_argument("--run", metavar="RUN",
                    help="a run of the model to gate (a --violin-report folder, its results.json, or a baseline "
                         "file): its paired noise against the baseline; without it, the baseline's repeats, or "
                         "a deterministic model's floor")
    gt = sub.add_parser("gate", help="decide a run (a merged one) against a baseline")
    gt.set_defaults(command_parser=gt)
    gt.add_argument("run", metavar="RUN", help="a --violin-report folder or its results.json")
    gt.add_argument("--baseline", required=True, metavar="FILE", help="the baseline to decide against")
    for p in (pl, gt):
        _margin_arguments(p)
    gt.add_argument("--accept-not-shown", action="store_true",
                    help="pass when nothing regressed though a guardrail was not shown within its margin, "
                         "as --violin-accept-not-shown")
    gt.add_argument("--allow-mismatch", action="store_true",
                    help="decide even when a task shares too few samples with the baseline")
    gt.add_argument("--report", metavar="DIR",
                    help="write results.json, report.html and summary.md with the gate's verdict into DIR "
                         "(RUN itself to update it)")
    return parser


def _margin_arguments(p) -> None:
    """The gate's margins, error rate and power, as the plugin's options name them."""
    from .gating.evidence import DEFAULT_POWER
    from .gating.policy import DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP, DEFAULT_MAX_REFUSAL_RISE, DEFAULT_MAX_REGRESSION

    p.add_argument("--max-regression", type=_share, default=DEFAULT_MAX_REGRESSION, metavar="X",
                    help=f"margin of the mean metric (default {DEFAULT_MAX_REGRESSION}), as "
                         f"--violin-max-regression")
    p.add_argument("--max-pass-drop", type=_share, default=DEFAULT_MAX_PASS_DROP, metavar="P",
                    help=f"margin of the pass rate (default {DEFAULT_MAX_PASS_DROP}), as "
                         f"--violin-max-pass-drop")
    p.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA, metavar="A",
                    help=f"the gate's error rate (default {DEFAULT_ALPHA}), as --violin-alpha")
    p.add_argument("--max-refusal-rise", type=_share, default=DEFAULT_MAX_REFUSAL_RISE, metavar="R",
                   help=f"margin of the refusal rate (default {DEFAULT_MAX_REFUSAL_RISE}), as "
                        f"--violin-max-refusal-rise")
    p.add_argument("--power", type=_power, default=DEFAULT_POWER, metavar="P",
                   help=f"the power of the planned sizes (default {DEFAULT_POWER}), as --violin-power")


def _batch(args, parser, out) -> None:
    """``batch list|cancel`` (module docstring)."""
    from .execution._batch_store import store_root
    from .report.text import printable

    if args.cache_dir:
        roots = [store_root(Path(args.cache_dir))]
    else:
        roots = [Path(".pytest_cache", "d", "violin-batches"), Path(".pytest_cache", "violin-batches")]
    api, identity = None, None
    if args.model:
        from .models.batch import batch_api_of
        from .models.registry import AdapterOptions, resolve_model

        adapter = resolve_model(args.model, AdapterOptions(rootdir=Path.cwd()))
        identity, api = str(adapter.identity), batch_api_of(adapter)
        if api is None:
            parser.error(f"--model={printable(args.model)!r} offers no batch API; accepted: openai:MODEL, "
                         f"gemini:MODEL or an adapter with batch_api()")
    elif args.action == "cancel":
        parser.error("batch cancel needs --model SPEC (the adapter whose key cancels the batches)")
    stores = _batch_stores(roots, identity, sys.stderr)
    records = [(store, r) for store in stores for r in store.records]
    if args.action == "cancel":
        known = {r.id: (store, r) for store, r in records if r.id}
        unknown = [i for i in args.ids if i not in known]
        if unknown:
            parser.error(printable(f"{unknown[0]!r} is not a batch this project submitted with {identity}; "
                                   f"accepted: {', '.join(sorted(known)) or 'none recorded'}"))
        for batch_id in args.ids or [r.id for _, r in records if r.id and r.state != "collected"]:
            status = api.cancel(batch_id)
            out.write(printable(f"cancel asked: {status.describe()}") + "\n")
        return
    if not records:
        out.write(printable(f"no batches recorded in {', '.join(str(r) for r in roots)}") + "\n")
    for store, record in records:  # every word of a line read from a record or a provider: one printable line
        line = (f"{store.identity}  {record.id or '(not named yet)'}  tag {record.tag}  "
                f"{len(record.requests)} requests  recorded {record.state}")
        if api is not None and record.id:
            line += f"  now {api.status(record.id).describe()}"
        out.write(printable(line) + "\n")



def _batch_stores(roots, identity, err):
    """The batch records in ``roots`` (those of ``identity`` only, when given); a file that cannot be a
    record (a FIFO, a directory, one over the size cap, not JSON) is skipped with one line on ``err``."""
    from ._fs import read_option_json
    from .execution._batch_store import MAX_RECORD_BYTES, BatchStore
    from .report.text import printable

    stores = []
    for root in roots:
        for path in sorted(root.glob("*.json")) if root.is_dir() else ():
            try:  # the bounded reader: regular files only, opened without blocking, refused by their size
                doc = read_option_json(path, what="batch record", limit=MAX_RECORD_BYTES)
            except ViolinError as exc:
                err.write(f"skipped: {printable(exc)}\n")
                continue
            recorded = doc.get("adapter") if isinstance(doc, dict) else None
            if isinstance(recorded, str) and (identity is None or recorded == identity):
                store = BatchStore(root, recorded)
                store.load()
                stores.append(store)
    return stores



def _bounded_float(low: float, high: float, low_open: bool):
    def convert(text: str) -> float:
        import math

        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and (value > low if low_open else value >= low) and value <= high):
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is invalid; accepted: a number "
                                             f"{'>' if low_open else '>='} {low:g} and <= {high:g}")
        return value

    return convert


_share = _bounded_float(0.0, 1.0, low_open=False)


def _power(text: str) -> float:
    value = _bounded_float(0.5, 1.0, low_open=False)(text)
    if value >= 1.0:  # a power of 1 needs infinitely many samples
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is invalid; accepted: a number >= 0.5 and < 1")
    return value


def _alpha(text: str) -> float:
    from .gating.policy import MAX_ALPHA  # the gate's modules load only for the commands that gate
    return _bounded_float(0.0, MAX_ALPHA, low_open=True)(text)


def _merge(args, out) -> None:
    from .report.merge import merge_shards, write_merged

    merged = merge_shards(args.runs)
    write_merged(merged, args.output, save_baseline=args.save_baseline,
                 step_summary=not args.no_step_summary)
    meta = merged.metadata
    out.write(f"merged {meta['shards']['total']} shards: {len(merged.records)} samples, "
              f"{sum(1 for r in merged.records if r.get('outcome') == 'passed')} passed; "
              f"reports written to {args.output}"
              + (f", baseline to {args.save_baseline}" if args.save_baseline else "") + "\n")
    for note in merged.notes:
        out.write(f"note: {note}\n")


def _gate(args, out) -> int:
    from .errors import BaselineError, InvalidArgumentError
    from .gating import read_baseline
    from .gating.decide import GateLimits, decide
    from .report.merge import load_results, run_baseline
    from .report.terminal import comparison_lines
    from .report.text import printable

    folder, doc = load_results(args.run)
    if not doc["samples"]:
        raise InvalidArgumentError(f"{args.run}: the run holds no sample; accepted: a report of a run "
                                   f"that ran Violin samples")
    try:
        baseline = read_baseline(args.baseline)
    except BaselineError as exc:
        raise InvalidArgumentError(f"--baseline={args.baseline!r}: {exc}") from None
    meta = doc["metadata"]
    current = run_baseline(doc["samples"], meta)
    limits = GateLimits(max_regression=args.max_regression, max_pass_drop=args.max_pass_drop,
                        alpha=args.alpha, allow_mismatch=args.allow_mismatch,
                        max_refusal_rise=args.max_refusal_rise, power=args.power,
                        accept_not_shown=args.accept_not_shown)
    verdict = decide(baseline, doc["samples"], current, limits=limits, baseline_label=args.baseline,
                     interrupted=bool(meta.get("interrupted")))
    for text, _level in comparison_lines(verdict.comparison):
        out.write(printable(text) + "\n")
    for message in verdict.messages:
        out.write(printable(message) + "\n")
    if args.report:
        from .report.merge import with_thumbnails, write_reports

        write_reports(args.report, with_thumbnails(doc["samples"], folder),
                      metadata={**meta, "baseline": args.baseline}, aggregates=current["aggregates"],
                      comparison=verdict.comparison)
        out.write(f"reports with the gate's verdict written to {args.report}\n")
    return verdict.exit_status(EXIT_OK)


def _plan(args, out) -> None:
    """``plan``: per task and variation, the samples each guardrail needs (gating.plan)."""
    from .errors import BaselineError, InvalidArgumentError
    from .gating import read_baseline
    from .gating.plan import SOURCES, plan
    from .report.text import printable

    try:
        baseline = read_baseline(args.baseline)
    except BaselineError as exc:
        raise InvalidArgumentError(f"--baseline={args.baseline!r}: {exc}") from None
    run = None
    if args.run:
        from .report.merge import load_results, run_baseline

        try:
            run = read_baseline(args.run)
        except BaselineError:
            _folder, doc = load_results(args.run)
            run = run_baseline(doc["samples"], doc["metadata"])
    rows = plan(baseline, run, max_regression=args.max_regression, max_pass_drop=args.max_pass_drop,
                max_refusal_rise=args.max_refusal_rise, alpha=args.alpha, power=args.power)
    names = {"mean": "mean", "pass_rate": "pass rate", "refusal_rate": "refusals"}
    out.write(f"samples each group needs for an unchanged model to be shown within the margins "
              f"(mean {args.max_regression:g}, pass rate {100 * args.max_pass_drop:g} points, refusals "
              f"{100 * args.max_refusal_rise:g} point(s); alpha {args.alpha:g}, power {args.power:g}):\n")
    for row in rows:
        needs = ", ".join(f"{names[k]} {row.needed[k]:,}" if row.needed.get(k) else f"{names[k]} -"
                          for k in ("mean", "pass_rate", "refusal_rate") if k in row.guardrails)
        verdict = "decidable" if row.decidable else "NOT decidable on its samples"
        more = (f"; with --violin-repeats={row.repeats} on the baseline and the run"
                if not row.decidable and row.repeats else "")
        out.write(printable(f"  {row.label:<24s} {row.size:>6,} in the baseline: needs {needs} "
                            f"({SOURCES[row.source]}): {verdict}{more}") + "\n")


COMPARE_FORMATS = ("terminal", "md", "latex", "csv", "html")
TREND_FORMATS = ("terminal", "md", "csv", "html")


def _trend(args, parser, out) -> None:
    from .compare.runs import load_run
    from .compare.trend import build_trend

    if len(args.label) > len(args.runs):
        parser.error(f"argument --label: {len(args.label)} labels given for {len(args.runs)} RUNs")
    if args.format == "html" and not args.output:
        parser.error("argument --format: html needs --output FILE")
    labels = [*args.label, *([None] * (len(args.runs) - len(args.label)))]
    trend = build_trend([load_run(spec, label=label) for spec, label in zip(args.runs, labels)],
                        paper=args.paper)
    if args.format == "html":
        trend.write_html(args.output)
    else:
        text = {"terminal": trend.text, "md": trend.markdown, "csv": trend.csv}[args.format]()
        if not args.output:
            out.write(text)
            return
        from ._fs import atomic_write

        atomic_write(args.output, text)
    out.write(f"wrote the trend of {len(args.runs)} run(s) to {args.output}\n")


def _compare(args, parser, out) -> None:
    from .compare.formats import render
    from .compare.runs import load_run
    from .compare.table import build

    if len(args.label) > len(args.runs):
        parser.error(f"argument --label: {len(args.label)} labels given for {len(args.runs)} RUNs")
    if args.format == "html" and not args.output:
        parser.error("argument --format: html needs --output FILE")
    if args.suite is not None:
        _check_suite(args.suite, parser)
    labels = [*args.label, *([None] * (len(args.runs) - len(args.label)))]
    runs = [load_run(spec, label=label, suite=args.suite, progress=not args.no_progress)
            for spec, label in zip(args.runs, labels)]
    paper = ()
    if args.paper:
        from .compare.paper import published_rows

        paper = published_rows()
    comparison = build(runs, paper=paper, all_samples=args.all_samples,
                       allow_mismatch=args.allow_mismatch, seed=args.seed)
    if args.format == "html":
        from .compare.html import write_html

        write_html(args.output, comparison, runs)
    elif args.output:
        from ._fs import atomic_write

        atomic_write(args.output, render(comparison, args.format))
    else:
        out.write(render(comparison, args.format))
        return
    out.write(f"wrote the comparison of {len(runs)} run(s) to {args.output}\n")


def _check_suite(suite, parser) -> None:
    from .suite import SUITES

    if suite not in SUITES and not Path(suite).exists():
        parser.error(f"argument --suite: {suite!r} is neither a built-in suite "
                     f"({', '.join(SUITES)}) nor an existing manifest file or folder")


def _load(args, parser):
    from .suite import load_suite

    _check_suite(args.suite, parser)
    if args.photos_dir is not None and not Path(args.photos_dir).is_dir():
        parser.error(f"argument --photos-dir: {args.photos_dir!r} is not a directory")
    return load_suite(args.suite, tasks=args.tasks, limit=args.limit, seed=args.seed,
                      photos_dir=args.photos_dir)


def _print_counts(samples, suite, out) -> None:
    counts = Counter((s.task, s.variation) for s in samples)
    tasks = Counter(s.task for s in samples)
    out.write(f"suite {suite}: {len(samples)} samples\n")
    out.write(f"  {'task':<8} {'variation':<12} {'count':>6}\n")
    last = None
    for task, variation in counts:  # first-seen order
        if last is not None and task != last:
            out.write(f"  {last:<8} {'(all)':<12} {tasks[last]:>6}\n")
        out.write(f"  {task:<8} {variation:<12} {counts[(task, variation)]:>6}\n")
        last = task
    if last is not None:
        out.write(f"  {last:<8} {'(all)':<12} {tasks[last]:>6}\n")


def main(argv=None) -> int:
    """Run the command line; returns the exit status (module docstring)."""
    try:
        status = _run(argv)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at the interpreter's exit
        return status
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_PIPE


def _stdout_to_devnull() -> None:
    """Point standard output's descriptor at the null device, so what is still buffered goes nowhere instead of
    raising again when the interpreter flushes it at exit."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without a descriptor
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _run(argv) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # errors found after parsing are the sub-command's: its usage, not the top-level one
    command_parser = args.command_parser
    try:
        if args.command in ("compare", "trend"):
            (_compare if args.command == "compare" else _trend)(args, command_parser, sys.stdout)
            return EXIT_OK
        if args.command == "batch":
            _batch(args, command_parser, sys.stdout)
            return EXIT_OK
        if args.command == "merge":
            _merge(args, sys.stdout)
            return EXIT_OK
        if args.command == "gate":
            return _gate(args, sys.stdout)
        if args.command == "plan":
            _plan(args, sys.stdout)
            return EXIT_OK
        samples = _load(args, command_parser)
        if args.command == "list":
            _print_counts(samples, args.suite, sys.stdout)
        elif args.command == "export":
            from .suite.manifest import export_samples

            path = export_samples(samples, args.out_dir, progress=not args.no_progress,
                                  compression=args.compression)
            sys.stdout.write(f"wrote {len(samples)} samples to {path}\n")
        elif args.command == "sheet":
            from .imaging import encode_png
            from .suite.drawing import contact_sheet

            sheet = contact_sheet(samples, columns=args.columns)
            Path(args.out_png).write_bytes(encode_png(sheet, compression=6))
            sys.stdout.write(f"wrote a contact sheet of {len(samples)} samples to "
                             f"{args.out_png}\n")
    except BrokenPipeError:
        raise  # standard output was closed: no message to write (main)
    except KeyboardInterrupt:
        sys.stderr.write(f"interrupted: {args.command} stopped before it finished\n")
        return EXIT_INTERRUPTED
    except (ViolinError, OSError) as exc:
        from .errors import GenerationError, InternalError
        from .report.text import printable

        sys.stderr.write(f"error: {printable(exc)}\n")
        # a provider that cannot be reached (batch list|cancel) is no usage error
        usage = isinstance(exc, ViolinError) and not isinstance(exc, (InternalError, GenerationError))
        return EXIT_USAGE if usage else EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
