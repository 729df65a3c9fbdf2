"""HTTP transport shared by the network adapters, one job a module.

``client`` composes the rest (:class:`~.client.HttpClient`, the retry loop;
:func:`~.client.client_from_options`) over ``session`` (the requests
session), ``environment`` (proxies, CA, netrc), ``origins`` and
``credentials`` (where credentials may go; headers, ``${ENV}``), ``attempt``
and ``deadline`` (one attempt and its watchdog), ``body`` (limits, content
decoding), ``budget`` (one sample's scope), ``retries`` and ``failures``,
``limits``, ``outcomes``, ``result``, ``text`` and ``jsonload``; ``decode``
finds the image in an answer, ``jobs`` polls queued jobs. Imports go one
way (``tests/test_layers.py``); ``client`` re-exports the names adapters
and tests imported from it before the split. Only adapters under
:mod:`pytest_violin.models` use them.
"""
