"""HTTP transport shared by the network adapters, one job a module.

``client`` composes the rest (:class:`~.client.HttpClient`;
:func:`~.client.client_from_options`) over ``session`` (the requests
session), ``environment`` (proxies, CA, netrc), ``origins`` and
``credentials`` (where credentials may go; headers, ``${ENV}``),
``retries`` (one request's attempts and waits on tenacity), ``deadline``
(one attempt's deadline and its watchdog), ``body`` (limits, content
decoding), ``outcomes`` (why an attempt failed, whether to retry, setup
error or refusal), ``limits`` (rate, samples in flight, one sample's scope
and budget), ``result``, ``text`` and ``jsonload``; ``decode`` finds the
image in an answer, ``jobs`` polls queued jobs. Imports go one way
(``tests/meta/test_layers.py``); ``client`` re-exports the names adapters and
tests imported from it before the split. Only adapters under
:mod:`pytest_violin.models` use them.
"""
