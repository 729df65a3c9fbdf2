"""The attack kit: a key never reaches an origin the user did not name.

Every provider adapter and the generic job mode talk to an API server that
serves, in one *slot* of its flow (a status URL, a result URL, a cancel URL,
an image URL, a redirect of the first request, a redirect chain, a redirect
of an image download), a URL of one *shape* pointing at a second, foreign
server: a backslash before ``@``, user info, ``..``, percent-encoded hosts,
mixed-case schemes, IPv6 brackets, trailing dots, tabs and newlines, and the
key itself in the query (plain, percent-encoded, ``+``-encoded, every byte
escaped). Both servers log every request. The foreign server must never
receive the key in any form, in any header, URL or body; every probe ends as
an image or as a one-line :class:`~pytest_violin.errors.GenerationError`; a
foreign image URL without a secret is still fetched, anonymously.

Probes of one test run in threads (each adapter has its own session); host
names resolve through a stub that knows only ``127.0.0.1`` and
``localhost`` (a trailing dot resolving too, the worst case), so no DNS
lookup leaves the machine.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import pytest

from pytest_violin.errors import GenerationError
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.models._transport.origins import EnvironmentSettings
from pytest_violin.models._transport.origins import Origins, UrlRefused, check_path_id, guard, origin_of, refusal

from _servers import FaultServer, Reply, png_bytes, secret_forms, solid

#: The planted key: characters that change under percent- and ``+``-encoding.
KEY = "kit/9f+8e=7d 6c5b4a3f"
KEY_VAR = "VIOLIN_KIT_KEY"
PNG = png_bytes(solid(8, 8, (10, 20, 30)))
REQUEST = GenerationRequest(prompt="p", width=8, height=8, seed=1, sample_id="s", task="color")


def _every_byte(text: str, fmt: str) -> str:
    return "".join(fmt % b for b in text.encode())


#: What the foreign server must never see (raw, encodings, base64, every byte escaped).
FORBIDDEN = sorted(secret_forms(KEY) | {_every_byte(KEY, "%%%02X"), _every_byte(KEY, "%%%02x"),
                                        KEY.replace(" ", "+")}, key=len, reverse=True)

#: name -> URL template: {O} the foreign host:port, {A} the API's, {PO} the foreign port,
#: {P} the probe's id (so a request on the foreign server names its probe), {K} the key.
SHAPES = {
    "foreign": "http://{O}/{P}.png",
    "backslash-at": "http://{O}\\@{A}/{P}.png",
    "encoded-backslash-at": "http://{O}%5C@{A}/{P}.png",
    "backslash-path": "http://{O}\\{P}.png",
    "userinfo-api-at-foreign": "http://{A}@{O}/{P}.png",
    "userinfo-password": "http://kit:pw@{O}/{P}.png",
    "ipv6-userinfo": "http://[::1]@{O}/{P}.png",
    "fragment-at": "http://{O}#@{A}/{P}.png",
    "dotdot": "http://{O}/{P}/..",
    "dotdot-path": "http://{O}/../{P}.png",
    "percent-host": "http://%31%32%37.0.0.1:{PO}/{P}.png",
    "percent-dot-host": "http://127%2e0.0.1:{PO}/{P}.png",
    "mixed-case-scheme": "hTtP://{O}/{P}.png",
    "upper-scheme": "HTTP://{O}/{P}.png",
    "ipv6-mapped": "http://[::ffff:127.0.0.1]:{PO}/{P}.png",
    "trailing-dot": "http://127.0.0.1.:{PO}/{P}.png",
    "localhost-trailing-dot": "http://localhost.:{PO}/{P}.png",
    "tab-in-host": "http://127.0.0.1\t:{PO}/{P}.png",
    "newline-in-path": "http://{O}/{P}\n.png",
    "leading-tab": "\thttp://{O}/{P}.png",
    "key-plain": "http://{O}/{P}.png?k={K}",
    "key-percent": "http://{O}/{P}.png?k={Kq}",
    "key-plus": "http://{O}/{P}.png?k={Kp}",
    "key-space-encoded": "http://{O}/{P}.png?k={Ks}",
    "key-every-byte": "http://{O}/{P}.png?k={Kx}",
    "key-every-byte-lower": "http://{O}/{P}.png?k={Kl}",
    "key-in-path": "http://{O}/{P}/{Kq}.png",
    "key-upper-scheme": "HTTP://{O}/{P}.png?k={K}",
    "key-backslash-at": "http://{O}\\@{A}/{P}.png?k={K}",
}

#: The shapes of the default (fast) run, one of each family; the ``slow`` run takes all of them.
CORE = ("foreign", "backslash-at", "userinfo-api-at-foreign", "percent-host", "tab-in-host", "key-percent",
        "key-plus", "key-every-byte-lower")

#: Shapes a compliant client must never fetch at all (refused with one line).
REFUSED = {"backslash-at", "encoded-backslash-at", "backslash-path", "userinfo-api-at-foreign",
           "userinfo-password", "ipv6-userinfo", "percent-host", "percent-dot-host", "tab-in-host",
           "newline-in-path", "leading-tab", "key-plain", "key-percent", "key-plus", "key-space-encoded",
           "key-every-byte",
           "key-every-byte-lower", "key-in-path", "key-upper-scheme", "key-backslash-at"}

#: Shapes a Location header cannot carry (a line break would end the header).
NOT_IN_HEADERS = {"newline-in-path"}

#: Shapes that are harmless in a header: the header parser drops a value's surrounding
#: whitespace (RFC 9110 5.5), so the URL is an ordinary foreign one.
HARMLESS_IN_HEADERS = {"leading-tab"}


# ----------------------------------------------------------------------------- probes


@dataclass
class Probe:
    n: int
    slot: str
    shape: str
    url: str = ""
    base: str = ""
    cancel: threading.Event = field(default_factory=threading.Event)
    outcome: object = None

    @property
    def pid(self) -> str:
        return f"p{self.n}x"  # delimited: p1x is no part of p15x


def _fill(template: str, api: str, other: str, pid: str) -> str:
    return template.format(O=other, A=api, PO=other.rsplit(":", 1)[1], P=pid, K=KEY,
                           Kq=quote(KEY, safe=""), Kp=quote_plus(KEY), Kx=_every_byte(KEY, "%%%02X"),
                           Kl=_every_byte(KEY, "%%%02x"), Ks=KEY.replace(" ", "%20"))


def _redirect_slot(probe: Probe, rec) -> Reply | None:
    """The redirect slots: the first POST (and, for ``image-redirect``, the image GET)."""
    tail = rec.path.split("?", 1)[0].split("/", 2)[-1]
    if probe.slot in ("r307", "r308") and rec.method == "POST" and not tail.endswith("cancel"):
        return Reply(int(probe.slot[1:]), headers={"Location": probe.url})
    if probe.slot == "chain" and rec.method == "POST" and not tail.endswith("cancel"):
        if tail == "hop":
            return Reply(307, headers={"Location": probe.url})
        return Reply(307, headers={"Location": f"{probe.base.split('/' + probe.pid)[0]}/{probe.pid}/hop"})
    if tail.endswith("img.png"):
        if probe.slot == "image-redirect":
            return Reply(302, headers={"Location": probe.url})
        return Reply(200, PNG, content_type="image/png")
    return None


def _own(probe: Probe, slot: str, own: str) -> str:
    return probe.url if probe.slot == slot else own


@dataclass
class Flow:
    """One adapter: how to build it for a probe, and how its API answers."""

    name: str
    slots: tuple
    build: object  # (probe, api_url, monkeypatch, tmp_path) -> adapter
    answer: object  # (probe, rec, tail, own_base) -> Reply


def _img(probe, own):
    return _own(probe, "image", f"{own}/img.png")


# --- http (plain and job mode)

def _http_build(probe, api, mp, tmp_path, job=False):
    extra = {"poll_url_path": "status_url"} if job else {}
    return resolve_model(f"{api}/{probe.pid}/gen", _options(probe, tmp_path, headers=True, extra=extra))


def _http_answer(probe, rec, tail, own):
    return Reply.json({"url": _img(probe, own)})


def _job_answer(probe, rec, tail, own):
    if tail == "gen":
        return Reply.json({"status": "queued", "status_url": _own(probe, "status", f"{own}/status")},
                          headers={"Retry-After": "0"})
    return Reply.json({"status": "done", "url": _img(probe, own)})


# --- bfl

def _bfl_build(probe, api, mp, tmp_path):
    mp.setenv("BFL_API_KEY", KEY)
    mp.setenv("BFL_BASE_URL", f"{api}/{probe.pid}/v1")
    return resolve_model("bfl:flux-dev", _options(probe, tmp_path))


def _bfl_answer(probe, rec, tail, own):
    if rec.method == "POST":
        return Reply.json({"id": "j1", "polling_url": _own(probe, "status", f"{own}/v1/get_result?id=j1")},
                          headers={"Retry-After": "0"})
    return Reply.json({"status": "Ready", "result": {"sample": _img(probe, own)}})


# --- fal

def _fal_build(probe, api, mp, tmp_path):
    mp.setenv("FAL_KEY", KEY)
    mp.setenv("FAL_BASE_URL", f"{api}/{probe.pid}")
    return resolve_model("fal:kit/app", _options(probe, tmp_path))


def _fal_answer(probe, rec, tail, own):
    req = f"{own}/kit/app/requests/r1"
    if rec.method == "POST":
        return Reply.json({"request_id": "r1", "status_url": _own(probe, "status", f"{req}/status"),
                           "response_url": _own(probe, "result", req),
                           "cancel_url": _own(probe, "cancel", f"{req}/cancel")}, headers={"Retry-After": "0"})
    if rec.method == "PUT":
        return Reply.json({"status": "CANCELLATION_REQUESTED"})
    if tail.endswith("/status"):
        if probe.slot == "cancel":
            probe.cancel.set()
            return Reply.json({"status": "IN_PROGRESS"}, headers={"Retry-After": "0"})
        return Reply.json({"status": "COMPLETED"})
    return Reply.json({"images": [{"url": _img(probe, own)}]})


# --- replicate

def _replicate_build(probe, api, mp, tmp_path):
    mp.setenv("REPLICATE_API_TOKEN", KEY)
    mp.setenv("REPLICATE_BASE_URL", f"{api}/{probe.pid}/v1")
    return resolve_model("replicate:kit/model", _options(probe, tmp_path))


def _replicate_answer(probe, rec, tail, own):
    urls = {"get": _own(probe, "status", f"{own}/v1/predictions/x1"),
            "cancel": _own(probe, "cancel", f"{own}/v1/predictions/x1/cancel")}
    if rec.method == "POST":
        if tail.endswith("/cancel"):
            return Reply.json({"id": "x1", "status": "canceled", "urls": urls})
        return Reply.json({"id": "x1", "status": "starting", "urls": urls}, headers={"Retry-After": "0"})
    if probe.slot == "cancel":
        probe.cancel.set()
        return Reply.json({"id": "x1", "status": "processing", "urls": urls}, headers={"Retry-After": "0"})
    return Reply.json({"id": "x1", "status": "succeeded", "urls": urls, "output": [_img(probe, own)]})


# --- openai, ark (image URLs in data[0].url), a1111 (images[0]), gemini and comfyui (redirects)

def _provider_build(scheme, key_var, base_var, spec, suffix="/v1"):
    def build(probe, api, mp, tmp_path):
        mp.setenv(key_var, KEY)
        mp.setenv(base_var, f"{api}/{probe.pid}{suffix}")
        return resolve_model(spec, _options(probe, tmp_path))
    return build


def _data_url_answer(probe, rec, tail, own):
    return Reply.json({"data": [{"url": _img(probe, own)}]})


def _a1111_build(probe, api, mp, tmp_path):
    return resolve_model(f"a1111:{api}/{probe.pid}", _options(probe, tmp_path, headers=True))


def _a1111_answer(probe, rec, tail, own):
    return Reply.json({"images": [_img(probe, own)]})


WORKFLOW = {
    "5": {"class_type": "EmptyLatentImage", "inputs": {"width": "{width}", "height": "{height}", "batch_size": 1}},
    "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "{prompt}"}},
    "3": {"class_type": "KSampler", "inputs": {"seed": "{seed}", "positive": ["6", 0], "latent_image": ["5", 0]}},
    "9": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "violin_{sample_id}"}},
}


def _comfyui_build(probe, api, mp, tmp_path):
    path = tmp_path / "workflow.json"
    if not path.exists():
        path.write_text(json.dumps(WORKFLOW))
    return resolve_model(f"comfyui:{api}/{probe.pid}",
                         _options(probe, tmp_path, headers=True, extra={"workflow": str(path)}))


def _error_answer(probe, rec, tail, own):
    return Reply.json({"error": "no such route in the kit"}, status=404)


REDIRECTS = ("r307", "r308", "chain")
FLOWS = {f.name: f for f in (
    Flow("http", ("image", "image-redirect") + REDIRECTS, _http_build, _http_answer),
    Flow("http-job", ("status", "image", "image-redirect") + REDIRECTS,
         lambda p, a, m, t: _http_build(p, a, m, t, job=True), _job_answer),
    Flow("bfl", ("status", "image", "image-redirect") + REDIRECTS, _bfl_build, _bfl_answer),
    Flow("fal", ("status", "result", "cancel", "image", "image-redirect") + REDIRECTS, _fal_build,
         _fal_answer),
    Flow("replicate", ("status", "cancel", "image", "image-redirect") + REDIRECTS, _replicate_build,
         _replicate_answer),
    Flow("openai", ("image", "image-redirect") + REDIRECTS,
         _provider_build("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", "openai:gpt-image-1"), _data_url_answer),
    Flow("ark", ("image", "image-redirect") + REDIRECTS,
         _provider_build("ark", "ARK_API_KEY", "ARK_BASE_URL", "ark:seedream-4-5-251128"), _data_url_answer),
    Flow("gemini", REDIRECTS, _provider_build("gemini", "GEMINI_API_KEY", "GEMINI_BASE_URL",
                                              "gemini:gemini-2.5-flash-image", "/v1beta"), _error_answer),
    Flow("a1111", ("image", "image-redirect") + REDIRECTS, _a1111_build, _a1111_answer),
    Flow("comfyui", REDIRECTS, _comfyui_build, _error_answer),
)}


def _options(probe, tmp_path, *, headers=False, extra=None):
    return AdapterOptions(rootdir=tmp_path, timeout=5.0, retries=0, cancel=probe.cancel, extra=extra or {},
                          headers=(f"X-Kit-Key: ${{{KEY_VAR}}}", f"Authorization: Bearer ${{{KEY_VAR}}}")
                          if headers else ())


# ------------------------------------------------------------------------ the servers


@pytest.fixture
def stub_resolver(monkeypatch):
    """Only numeric addresses and ``localhost`` resolve (a trailing dot too): no DNS lookup."""
    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else str(host)
        name = name[:-1] if name.endswith(".") else name
        try:
            socket.inet_pton(socket.AF_INET6 if ":" in name else socket.AF_INET, name)
        except OSError:
            if name != "localhost":
                raise socket.gaierror(socket.EAI_NONAME, "not known to the kit's resolver") from None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    # the environment's proxy / netrc settings, read once instead of once per adapter (speed)
    captured = EnvironmentSettings.capture()
    monkeypatch.setattr(EnvironmentSettings, "capture", classmethod(lambda cls, environ=None: captured))


def _leaks(requests_seen) -> list[str]:
    out = []
    for rec in requests_seen:
        texts = [rec.path, rec.body.decode("latin-1")] + [f"{n}: {v}" for n, v in rec.headers.items()]
        seen = [form for text in texts for form in (text, unquote(text), unquote_plus(text))]
        for text in seen:
            for form in FORBIDDEN:
                if form in text:
                    out.append(f"LEAK {rec.method} {rec.path[:80]!r}: {form!r} in {text[:80]!r}")
                    break
    return out


class Kit:
    """The two servers and the probes they answer, shared by the module's tests."""

    def __init__(self):
        self.probes: dict[str, Probe] = {}
        self.flows: dict[str, Flow] = {}
        self.count = 0
        self.lock = threading.Lock()
        self.other = FaultServer(handler=lambda rec: Reply(200, PNG, content_type="image/png"))
        self.api = FaultServer(handler=self._answer)
        self.pool = ThreadPoolExecutor(max_workers=32)

    def _answer(self, rec):
        pid, _, tail = rec.path.lstrip("/").partition("/")
        probe = self.probes.get(pid)
        if probe is None:
            return Reply(404, "no such probe")
        flow = self.flows[pid]
        return _redirect_slot(probe, rec) or flow.answer(probe, rec, tail.split("?", 1)[0], probe.base)

    def run(self, flow: Flow, slots, monkeypatch, tmp_path, shapes=tuple(SHAPES)) -> list[Probe]:
        """Each of ``shapes`` in every slot of ``flow``, concurrently; the probes with their outcomes."""
        monkeypatch.setenv(KEY_VAR, KEY)
        api, other = self.api.url.split("//")[1], self.other.url.split("//")[1]
        adapters = []
        for slot in slots:
            for shape in shapes:
                template = SHAPES[shape]
                if slot in REDIRECTS + ("image-redirect",) and shape in NOT_IN_HEADERS:
                    continue
                with self.lock:
                    self.count += 1
                    probe = Probe(self.count, slot, shape)
                probe.url = _fill(template, api, other, probe.pid)
                probe.base = f"{self.api.url}/{probe.pid}"
                self.probes[probe.pid], self.flows[probe.pid] = probe, flow
                adapters.append((probe, flow.build(probe, self.api.url, monkeypatch, tmp_path)))
        list(self.pool.map(_generate, adapters))
        return [probe for probe, _ in adapters]

    def seen_by_other(self, probes) -> list:
        """The foreign server's requests that name one of ``probes`` (or none: ``dotdot`` shapes)."""
        pids = {p.pid for p in probes}
        return [r for r in self.other.requests
                if any(f"/{pid}" in r.path for pid in pids) or not re.search(r"/p[0-9]+x", r.path)]


def _generate(item):
    probe, adapter = item
    try:
        probe.outcome = adapter.generate(REQUEST)
    except GenerationError as exc:  # a refusal, or the server's failure: one line
        probe.outcome = exc
    finally:
        adapter.close()


@pytest.fixture(scope="module")
def kit():
    kit = Kit()
    with kit.other, kit.api:
        yield kit
    kit.pool.shutdown()


@pytest.mark.parametrize("shapes", [pytest.param(CORE, id="core"),
                                    pytest.param(tuple(SHAPES), id="all", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", list(FLOWS))
def test_the_key_never_reaches_a_foreign_origin(name, shapes, kit, monkeypatch, tmp_path, stub_resolver):
    flow = FLOWS[name]
    before = len(kit.api.requests)
    probes = kit.run(flow, flow.slots, monkeypatch, tmp_path, shapes)
    seen = kit.seen_by_other(probes)
    leaks = _leaks(seen)
    assert not leaks, f"{len(leaks)} leak(s) to the foreign server:\n" + "\n".join(leaks[:20])
    # the API itself did get the key (so the check above can fail)
    assert any(KEY in value for rec in kit.api.requests[before:] for value in rec.headers.values())
    problems = []
    for probe in probes:
        outcome = probe.outcome
        if outcome is None:
            problems.append(f"{probe.slot}/{probe.shape}: no outcome")
        elif isinstance(outcome, Exception):
            text = str(outcome)
            pieces = {KEY[i:i + 8] for i in range(len(KEY) - 7)}  # no 8 characters of the key either
            if "\n" in text or any(form in text for form in FORBIDDEN) or any(p in text for p in pieces):
                problems.append(f"{probe.slot}/{probe.shape}: message {text!r}")
        header = probe.slot in REDIRECTS + ("image-redirect",)
        if probe.shape in REFUSED and not (header and probe.shape in HARMLESS_IN_HEADERS):  # never fetched: the foreign server saw nothing of this probe
            hits = [r.path for r in seen if f"/{probe.pid}" in r.path]
            if hits:
                problems.append(f"{probe.slot}/{probe.shape}: fetched {hits}")
    assert not problems, f"{len(problems)} of {len(probes)} probes:\n" + "\n".join(problems[:30])


@pytest.mark.parametrize("name", ["http", "http-job", "bfl", "fal", "replicate", "openai", "ark", "a1111"])
def test_a_foreign_image_url_without_secrets_is_fetched_anonymously(name, kit, monkeypatch, tmp_path,
                                                                    stub_resolver):
    probes = kit.run(FLOWS[name], ("image",), monkeypatch, tmp_path, ("foreign", "backslash-at", "key-percent"))
    by_shape = {p.shape: p for p in probes}
    plain = by_shape["foreign"]
    assert not isinstance(plain.outcome, Exception), plain.outcome
    hits = [r for r in kit.other.requests if r.path == f"/{plain.pid}.png"]
    assert len(hits) == 1
    assert not {"authorization", "x-kit-key", "x-key", "x-goog-api-key"} & {h.lower() for h in hits[0].headers}
    # a refused shape ends as a one-line refusal naming why, never as a fetch
    assert isinstance(by_shape["backslash-at"].outcome, GenerationError)
    assert "backslash" in str(by_shape["backslash-at"].outcome)
    keyed = by_shape["key-percent"].outcome
    assert isinstance(keyed, GenerationError) and "credential" in str(keyed)


def test_a_redirect_to_a_foreign_landing_with_the_key_is_refused_not_followed(kit, monkeypatch, tmp_path,
                                                                            stub_resolver):
    probes = kit.run(FLOWS["openai"], ("r307",), monkeypatch, tmp_path,
                     ("foreign", "key-plain", "key-percent", "key-plus", "key-every-byte", "key-in-path"))
    by_shape = {p.shape: p for p in probes}
    for shape in ("key-plain", "key-percent", "key-plus", "key-every-byte", "key-in-path"):
        outcome = by_shape[shape].outcome
        assert isinstance(outcome, UrlRefused), (shape, outcome)
        # the plain key has a space: refused for it before its key is looked at
        assert ("whitespace" if shape == "key-plain" else "not an origin you named") in str(outcome)
    # without the key the redirect is followed, without credentials
    assert [r.method for r in kit.other.requests if r.path == f"/{by_shape['foreign'].pid}.png"] == ["POST"]


# ------------------------------------------------------------------------- the rule itself


API = "http://api.example:8000/v1"


@pytest.mark.parametrize("url,why", [
    ("http://evil.test:1\\@api.example:8000/x", "backslash"),
    ("http://api.example:8000@evil.test/x", "user info"),
    ("http://u:p@api.example:8000/x", "user info"),
    ("http://%61pi.example:8000/x", "percent-encoded"),
    ("http://api.example:8000/x\ty", "control"),
    ("http://api.example:8000/x y", "whitespace"),
    ("http://api.example:8000/\u200bx", "control"),
    ("ftp://api.example/x", "http"),
    ("http:///x", "host"),
    ("http://api.example:99999/x", "malformed"),
    ("http://[::1/x", "malformed"),
])
def test_refused_urls_say_why_in_one_line(url, why):
    assert why in refusal(url)
    with pytest.raises(UrlRefused) as info:
        origin_of(url)
    assert "\n" not in str(info.value) and "\t" not in str(info.value)


def test_origins_by_the_parser_that_connects():
    assert origin_of("HTTP://API.example:8000/a") == origin_of(API) == ("http", "api.example", 8000)
    assert origin_of("https://h/x") == ("https", "h", 443)
    assert origin_of("http://[::FFFF:127.0.0.1]:5/") == ("http", "::ffff:127.0.0.1", 5)
    named = Origins([API], domains=["bfl.ai"])
    assert "http://api.example:8000/other?q=1" in named
    assert "http://api.example:8001/" not in named and "https://api.example:8000/" not in named
    assert "https://api.eu1.bfl.ai/v1/get_result" in named and "http://api.eu1.bfl.ai/" not in named
    assert "https://evilbfl.ai/" not in named and "https://bfl.ai.evil.test/" not in named
    assert "http://evil.test:1\\@api.example:8000/x" not in named
    learning = Origins()
    learning.add(origin_of(API))
    assert API in learning
    named.add(origin_of("http://evil.test/"))  # nothing is learned once a URL is named
    assert "http://evil.test/" not in named


def test_guard_refuses_secrets_to_foreign_origins_only():
    from pytest_violin.redaction import register_secret

    register_secret(KEY)
    named = Origins([API])
    assert guard(f"{API}/gen?k={quote(KEY, safe='')}", named) == origin_of(API)
    for form in (quote(KEY, safe=""), quote_plus(KEY), _every_byte(KEY, "%%%02x"), KEY.replace(" ", "%20")):
        with pytest.raises(UrlRefused, match="not an origin you named"):
            guard(f"http://cdn.test/x?k={form}", named)
    with pytest.raises(UrlRefused) as info:
        guard(f"http://cdn.test/x?k={KEY}", named)
    assert not any(KEY[i:i + 8] in str(info.value) for i in range(len(KEY) - 7)), str(info.value)
    with pytest.raises(UrlRefused, match="body"):
        guard("http://cdn.test/x", named, body=f"token={KEY}".encode())
    assert guard("http://cdn.test/x", named) == ("http", "cdn.test", 80)


def test_a_bytes_body_is_percent_and_plus_decoded_as_a_str_body_is():
    from pytest_violin.redaction import contains_secret, register_secret

    register_secret(KEY)
    named = Origins([API])
    # forms no registered variant spells out: every byte %-encoded in lower case, one space
    # %-encoded, lower-case form encoding (``%2f`` and ``+`` for the space)
    forms = [_every_byte(KEY, "%%%02x"), KEY.replace(" ", "%20"), quote_plus(KEY).lower()]
    for form in forms:
        assert contains_secret(f"k={form}")  # the str body: decoded before the check
        for body in (f"k={form}".encode(), bytearray(f"k={form}".encode()),
                     b"\x89PNG\r\n\x1a\n\xff\xfe--boundary\r\nk=" + form.encode() + b"\r\n\xc3("):
            assert contains_secret(body), (form, body)
            with pytest.raises(UrlRefused, match="body"):
                guard("http://cdn.test/x", named, body=body)
    innocent = b"\x89PNG\xff%zz%4+" + quote(KEY[:5], safe="").encode()
    assert not contains_secret(innocent) and guard("http://cdn.test/x", named, body=innocent)


@pytest.mark.parametrize("value", ["..", "../../etc", "a/../b", "%2e%2e", "/etc", "a\\b", "a//b", ".", ""])
def test_path_ids_stay_under_the_base(value):
    from pytest_violin.errors import ModelSpecError

    with pytest.raises(ModelSpecError):
        check_path_id(value, what="app id", accepted="OWNER/APP")
    assert check_path_id("fal-ai/flux/dev", what="app id", accepted="x") == "fal-ai/flux/dev"


def test_the_session_enforces_the_rule_even_when_an_adapter_forgets(monkeypatch):
    """Defence in depth: a request sent straight through the session (as cancel calls are), or
    through the client without ``anonymous()``, gets no credential on a foreign origin."""
    from pytest_violin.models._transport.client import HttpClient
    from pytest_violin.models._transport.retries import RetryPolicy
    from pytest_violin.redaction import register_secret

    register_secret(KEY)
    with FaultServer(default=Reply(200, PNG, content_type="image/png")) as other, \
            FaultServer(default=Reply(200, PNG, content_type="image/png")) as api:
        client = HttpClient(headers={"X-Kit-Key": KEY, "Authorization": f"Bearer {KEY}"},
                            policy=RetryPolicy(retries=0), origins=[api.url], auth=("kit", "pw-1234abcd"))
        client.request("GET", api.url + "/own")
        client.request("GET", other.url + "/forgot")  # no anonymous(): still anonymous
        client.session.request("PUT", other.url + "/cancel", timeout=5)
        with pytest.raises(UrlRefused):
            client.session.request("PUT", f"{other.url}/cancel?k={quote(KEY, safe='')}", timeout=5)
        with pytest.raises(UrlRefused):
            client.session.post(other.url + "/cancel", data=f"key={KEY}".encode(), timeout=5)
        client.close()
    assert api.requests[0].headers["X-Kit-Key"] == KEY and "Authorization" in api.requests[0].headers
    assert [r.path for r in other.requests] == ["/forgot", "/cancel"]
    assert not _leaks(other.requests)
    assert not any("authorization" in {h.lower() for h in r.headers} for r in other.requests)
