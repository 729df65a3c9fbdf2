"""The hypothesis profile registration and the session-scoped ``violin_limits`` fixture."""

import hypothesis  # noqa: F401  (imported once here, not re-imported by every pytester run)


def test_hypothesis_profile_option_selects_the_violin_profile(pytester, hypothesis_profile_kept):
    pytester.makepyfile(
        """
        from hypothesis import settings

        def test_profile():
            current = settings()
            assert settings._current_profile == "violin"
            assert current.deadline is None
            assert current.max_examples == 10
        """
    )
    result = pytester.runpytest("--hypothesis-profile=violin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_violin_limits_is_session_scoped_and_follows_options(pytester):
    pytester.makeini(
        """
        [pytest]
        violin_thresholds =
            color.sd=0.011
        """
    )
    pytester.makepyfile(
        """
        import pytest
        from hypothesis import given, strategies as st, settings

        @settings(max_examples=3)
        @given(st.integers())
        def test_usable_in_given(violin_limits, n):
            assert violin_limits["color.sd"] == 0.011
            assert violin_limits["shape.mean"] > 0
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


def test_ini_paths_are_relative_to_the_ini_file_even_from_a_subdirectory(pytester, monkeypatch):
    """``violin_save_outputs`` and ``violin_save_baseline`` from the ini file resolve
    against the ini file's folder, wherever pytest is started."""
    pytester.makeini(
        """
        [pytest]
        violin_model = oracle
        violin_limit = 2
        violin_save_outputs = recorded
        violin_save_baseline = baselines/base.json
        """
    )
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    result = pytester.runpytest("-p", "no:cacheprovider", "--rootdir", str(pytester.path),
                                "-c", str(pytester.path / "tox.ini"))
    result.assert_outcomes(passed=2)
    assert (pytester.path / "baselines" / "base.json").is_file()
    assert len(list((pytester.path / "recorded").rglob("*.png"))) == 2
    assert not (sub / "recorded").exists()


def test_marker_threshold_with_a_misspelt_metric_fails_the_test(pytester):
    # {"shape.dst": 0.0} names no metric: accepted and never applied, the test
    # would pass whatever the model drew
    pytester.makepyfile(test_m='''
import pytest
@pytest.mark.violin(tasks="shape", limit=1, thresholds={"shape.dst": 0.0})
def test_typo(violin_sample, violin_generate, violin_check):
    violin_check(violin_sample, violin_generate(violin_sample))

@pytest.mark.violin(tasks="shape", limit=1, thresholds={"shape.dist": 0.01, "ratio.ratio": 0.01})
def test_good(violin_sample, violin_generate, violin_check):
    violin_check(violin_sample, violin_generate(violin_sample))
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*bad violin thresholds*shape.dst*unknown metric*dst*"])
