"""Writing your own obedience tests: assertions, hypothesis strategies and profiles.

The public names stay where users import them: ``pytest_violin.testing.assertions``
and ``pytest_violin.testing.strategies`` are these modules under their old names.
"""
