"""The pytest plugin: the top layer of the package, wiring everything below it to pytest."""
