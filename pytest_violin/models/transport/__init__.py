"""HTTP transport shared by the network adapters.

``client`` (session, deadlines, retries, size caps, redirects),
``decode`` (finding the image in an answer) and ``credentials`` (headers,
``${ENV}`` expansion, URL credentials). Only adapters under
:mod:`pytest_violin.models` use them.
"""
