"""Hypothesis settings for property tests that call a real image model.

A model call takes seconds, not microseconds, so hypothesis's defaults (100 examples, a 200 ms deadline, the
``too_slow`` health check) do not fit. :func:`register_profiles` registers the ``violin`` profile; the plugin
calls it at start-up. When a model is configured (``--violin-model`` or the ini key) and the run chose no
profile of its own (no ``--hypothesis-profile``, no ``settings.load_profile`` in a conftest), the plugin also
loads it (:func:`load_for_model_run`), so a property test that calls a real model does not fail with
``DeadlineExceeded``; at the end of the run the previous profile is loaded again. Otherwise a run selects it
with ``pytest --hypothesis-profile=violin`` (or a test opts in with
``@settings(settings.get_profile("violin"))``).

The example database is kept (hypothesis's default directory, ``.hypothesis/examples``), so a failing example
found in one run is replayed first in the next one; cache that directory in CI to carry it across runs (see
``docs/writing_tests.md``).
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

__all__ = ["PROFILE_NAME", "VIOLIN_MAX_EXAMPLES", "load_for_model_run", "register_profiles", "restore_profile",
           "violin_settings"]

#: Name of the registered profile.
PROFILE_NAME = "violin"

#: Examples per property test under the ``violin`` profile: each one is a model call (seconds on a GPU, cents
#: on a paid API).
VIOLIN_MAX_EXAMPLES = 10


def violin_settings(parent: settings | None = None) -> settings:
    """Build the settings of the ``violin`` profile.

    Parameters
    ----------
    parent : hypothesis.settings, optional
        Settings to start from (default: hypothesis's current default, so a ``derandomize`` or database choice
        made elsewhere is kept).

    Returns
    -------
    hypothesis.settings
        No deadline, :data:`VIOLIN_MAX_EXAMPLES` examples, the ``too_slow``
        and ``large_base_example`` health checks suppressed, the example
        database kept and the explicit, reuse, generate, target and shrink
        phases enabled, so a failure is shrunk and then replayed. The
        ``explain`` phase is off: it re-runs the failing example hundreds
        of times, i.e. hundreds of model calls.
    """
    base = parent if parent is not None else settings.default
    suppressed = set(base.suppress_health_check) | {
        HealthCheck.too_slow,
        HealthCheck.large_base_example,
        HealthCheck.data_too_large,
    }
    return settings(
        base,
        deadline=None,
        max_examples=VIOLIN_MAX_EXAMPLES,
        suppress_health_check=sorted(suppressed, key=lambda h: h.value),
        phases=tuple(p for p in Phase if p.name != "explain"),
        print_blob=True,
    )


def register_profiles() -> None:
    """Register the ``violin`` hypothesis settings profile.

    Safe to call more than once (the registration is replaced). Registering does not load the profile:
    ``--hypothesis-profile=violin`` or ``settings.load_profile("violin")`` does.

    Examples
    --------
    >>> from hypothesis import settings
    >>> register_profiles()
    >>> settings.get_profile("violin").deadline is None
    True
    """
    settings.register_profile(PROFILE_NAME, violin_settings(settings.get_profile("default")))


def load_for_model_run(chosen: str | None) -> bool:
    """Load the ``violin`` profile for a run with a model, unless the run chose a profile.

    Parameters
    ----------
    chosen : str or None
        ``--hypothesis-profile`` of the run (None: not given).

    Returns
    -------
    bool
        True when the profile was loaded (call :func:`restore_profile` at the end of the run); False when
        ``--hypothesis-profile`` was given or another profile than hypothesis's ``default`` is already loaded
        (a conftest's ``settings.load_profile``): the user's choice stands.
    """
    if chosen:
        return False
    if settings.default is not settings.get_profile("default"):
        return False
    register_profiles()
    settings.load_profile(PROFILE_NAME)
    return True


def restore_profile() -> None:
    """Load hypothesis's ``default`` profile again if the ``violin`` one is still loaded.

    Called at the end of a run in which :func:`load_for_model_run` loaded it, so a pytest session run inside
    another one (``pytester``) leaves the outer session's settings as they were.
    """
    if settings.default is settings.get_profile(PROFILE_NAME):
        settings.load_profile("default")
