"""Model-backed property tests get the ``violin`` hypothesis settings without a flag.

With a model configured and no profile chosen, the plugin loads the
``violin`` profile (no deadline), so a property test whose model takes longer
than hypothesis's default deadline passes; an explicit ``--hypothesis-profile``
(or a conftest's ``settings.load_profile``) is kept, and the outer session's
profile is the same after the inner run.
"""

from __future__ import annotations

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
from hypothesis import settings

#: A stand-in for a real model: each call takes longer than hypothesis's
#: default deadline of 200 ms (the sleep simulates the latency; no test waits on it).
SLOW_MODEL = """
import time

class Model:
    cacheable = False

    def generate(self, request):
        time.sleep(0.35)
        return request.sample.expected()
"""

PROPERTY_TEST = """
from hypothesis import given, settings, strategies as st

from pytest_violin import load_suite
from pytest_violin.assertions import assert_obeys

SAMPLES = load_suite("violin", tasks=["color"], limit=2)


@given(index=st.sampled_from([0, 1]))
def test_model_obeys_any_sample(violin_generate, index):
    assert_obeys(violin_generate(SAMPLES[index]), SAMPLES[index])


def test_profile_in_force():
    print("PROFILE", settings.get_current_profile_name() if hasattr(settings, "get_current_profile_name")
          else "?", settings.default.deadline)
"""

ARGS = ("--violin-model=python:violin_models:Model", "-p", "no:randomly", "-p", "no:cacheprovider",
        "-s", "tests/test_props.py")


def _project(pytester):
    pytester.makepyfile(violin_models=SLOW_MODEL)
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_props.py").write_text(PROPERTY_TEST)


@pytest.fixture(autouse=True)
def no_profile_chosen(hypothesis_profile_kept):
    """Each test starts as a user's process that chose no profile: under hypothesis's ``default``.

    This suite's own run may be under a profile of its own (tests/conftest.py
    loads ``violin-ci`` when ``CI`` is set), which the plugin rightly keeps;
    ``hypothesis_profile_kept`` puts the outer profile back afterwards, also
    after an inner run that loaded one itself.
    """
    settings.load_profile("default")


def test_property_test_with_a_slow_model_passes_without_a_flag(pytester):
    before = settings.default
    _project(pytester)
    result = pytester.runpytest(*ARGS)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=2)
    assert "PROFILE violin None" in result.stdout.str()
    # the outer session's settings are what they were
    assert settings.default is before


@pytest.mark.slow  # a pytest run in a process of its own: CI's e2e step
def test_an_explicit_profile_is_kept(pytester):
    _project(pytester)
    result = pytester.runpytest(*ARGS, "--hypothesis-profile=default")
    out = result.stdout.str()
    assert "PROFILE default" in out and "PROFILE violin" not in out
    # under hypothesis's default deadline the slow model's property test fails:
    # the passing run above is the profile's doing
    result.assert_outcomes(passed=1, failed=1)


def test_no_model_no_profile_change(pytester):
    _project(pytester)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-s",
                                "tests/test_props.py", "-k", "profile_in_force")
    assert result.ret == 0
    assert "PROFILE violin" not in result.stdout.str()


def test_a_conftest_choice_is_kept(pytester):
    _project(pytester)
    pytester.makeconftest("from hypothesis import settings\n"
                          "settings.register_profile('team', deadline=1234)\n"
                          "settings.load_profile('team')\n")
    before = settings.get_profile("default")
    try:
        result = pytester.runpytest(*ARGS, "-k", "profile_in_force")
    finally:
        settings.load_profile("default")  # the conftest ran in this process
    assert result.ret == 0
    assert "PROFILE team" in result.stdout.str()
    assert settings.default is before
