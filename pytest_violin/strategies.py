"""Public name of :mod:`pytest_violin.testing.strategies` (its one home).

``import pytest_violin.strategies`` gives that very module, private names
included, so code written against the old layout keeps working.
"""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("pytest_violin.testing.strategies")
