"""pytest plugin entry point (``pytest11: violin``).

Without ``--violin-*`` options this module changes nothing in a pytest run.
"""
