"""The HTTP transport the network adapters share: internal, for the adapters under :mod:`pytest_violin.models` only."""
