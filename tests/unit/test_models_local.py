import sys
import textwrap
import threading

import numpy as np
import pytest

from pytest_violin.errors import (GenerationCancelled, GenerationCrashed, GenerationError, GenerationRefused,
                                  GenerationUnjudged, ModelSpecError)
from pytest_violin.imaging import as_rgb8, encode_png
from pytest_violin.models import registry
from pytest_violin.models.python import PythonAdapter
from pytest_violin.models.registry import AdapterOptions, resolve_model
from pytest_violin.models.request import GenerationRequest



def _request(sample, repeat=0):
    return GenerationRequest.from_sample(sample, base_seed=0, repeat=repeat)


def test_oracle_renders_expected(fake_samples):
    model = resolve_model("oracle")
    s = fake_samples[0]
    assert model.identity == "oracle" and model.cacheable is False
    assert np.array_equal(as_rgb8(model.generate(_request(s))), s.expected())
    with pytest.raises(ModelSpecError, match="no target"):
        resolve_model("oracle:x")
    req = GenerationRequest(prompt="p", width=4, height=4, seed=0, sample_id="a", task="color")
    with pytest.raises(GenerationError, match="needs the sample"):
        model.generate(req)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    name = f"violin_user_models_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        import numpy as np

        def black(request):
            return np.zeros((request.height, request.width, 3), np.uint8)

        class Model:
            def __init__(self):
                self.closed = False
            def generate(self, request):
                return np.full((request.height, request.width, 3), 255, np.uint8)
            def close(self):
                self.closed = True

        instance = Model()
        not_callable = 3
    """))
    yield name, tmp_path
    sys.modules.pop(name, None)


def test_python_adapter_function_class_and_instance(user_module, fake_samples):
    name, root = user_module
    opts = AdapterOptions(rootdir=root)
    req = _request(fake_samples[0])
    fn = resolve_model(f"python:{name}:black", opts)
    assert fn.identity == f"python:{name}:black" and fn.cacheable is False
    assert as_rgb8(fn.generate(req)).max() == 0
    cls = resolve_model(f"python:{name}:Model", opts)
    assert as_rgb8(cls.generate(req)).min() == 255
    inst = resolve_model(f"python:{name}:instance", opts)
    inst.close()
    assert sys.modules[name].instance.closed


@pytest.mark.parametrize("target, fragment", [
    ("nomodule_xyz_123:f", "module 'nomodule_xyz_123' not found"),
    ("{mod}:missing", "has no attribute 'missing'"),
    ("{mod}:not_callable", "neither callable"),
    ("{mod}", "malformed"),
])
def test_python_adapter_errors(user_module, target, fragment):
    name, root = user_module
    with pytest.raises(ModelSpecError) as info:
        resolve_model("python:" + target.format(mod=name), AdapterOptions(rootdir=root))
    assert fragment in str(info.value) and "python:MODULE:ATTR" in str(info.value)


def test_dir_replay_round_trip_and_missing_file(tmp_path, fake_samples):
    s = fake_samples[0]
    (tmp_path / "color/v1/red").mkdir(parents=True)
    (tmp_path / f"{s.id}.png").write_bytes(encode_png(s.expected()))
    (tmp_path / f"{s.id}.r1.png").write_bytes(encode_png(np.zeros((8, 8, 3), np.uint8)))
    model = resolve_model("dir:.", AdapterOptions(rootdir=tmp_path))
    assert model.cacheable is False
    assert np.array_equal(as_rgb8(model.generate(_request(s))), s.expected())
    assert as_rgb8(model.generate(_request(s, repeat=1))).max() == 0
    with pytest.raises(GenerationError) as info:
        model.generate(_request(fake_samples[1]))
    assert f"{fake_samples[1].id}.png" in str(info.value) and "does not exist" in str(info.value)


def test_dir_replay_missing_directory(tmp_path):
    with pytest.raises(ModelSpecError, match="does not exist"):
        resolve_model("dir:nowhere", AdapterOptions(rootdir=tmp_path))
    (tmp_path / "file").write_text("x")
    with pytest.raises(ModelSpecError, match="is not a directory"):
        resolve_model(f"dir:{tmp_path / 'file'}")


def test_third_party_scheme_through_entry_points(monkeypatch, fake_samples):
    class FakeEP:
        name = "acme"

        def load(self):
            def create(target, options):
                class Acme:
                    identity = f"acme:{target}"

                    def generate(self, request):
                        return np.full((request.height, request.width, 3), 7, np.uint8)

                    def close(self):
                        pass
                return Acme()
            return create

    monkeypatch.setattr(registry, "_entry_point_factories", lambda: {"acme": FakeEP()})
    model = resolve_model("acme:turbo")
    assert model.identity == "acme:turbo"
    assert as_rgb8(model.generate(_request(fake_samples[0]))).max() == 7
    assert "acme" in registry.available_schemes()


def test_python_module_whose_own_import_fails_names_that_import(tmp_path):
    # the module exists; it imports a package that is not installed: the error is that
    # import (naming the missing package and the line), not "module not found"
    name = f"violin_broken_model_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{name}.py").write_text("import os\nimport violin_not_installed_pkg_xyz\n"
                                         "def generate(request):\n    return None\n")
    try:
        with pytest.raises(ModelSpecError) as info:
            resolve_model(f"python:{name}:generate", AdapterOptions(rootdir=tmp_path))
    finally:
        sys.modules.pop(name, None)
    text = str(info.value)
    assert "not found" not in text
    assert f"importing '{name}' failed" in text
    assert "'violin_not_installed_pkg_xyz'" in text and ModuleNotFoundError.__name__ in text
    assert f"{name}.py:2" in text


def test_python_module_missing_inside_an_existing_package_is_not_found(tmp_path):
    pkg = f"violin_user_pkg_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("")
    try:
        with pytest.raises(ModelSpecError) as info:
            resolve_model(f"python:{pkg}.nomodule:f", AdapterOptions(rootdir=tmp_path))
    finally:
        sys.modules.pop(pkg, None)
    assert f"module '{pkg}.nomodule' not found" in str(info.value)


def test_python_module_raising_at_import_names_the_exception(tmp_path):
    name = f"violin_raising_model_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{name}.py").write_text("raise RuntimeError('no GPU visible')\n")
    try:
        with pytest.raises(ModelSpecError) as info:
            resolve_model(f"python:{name}:generate", AdapterOptions(rootdir=tmp_path))
    finally:
        sys.modules.pop(name, None)
    assert "RuntimeError: no GPU visible" in str(info.value) and f"{name}.py:1" in str(info.value)


def test_record_then_replay_from_a_subdirectory(pytester, monkeypatch):
    """`--violin-save-outputs=DIR` then `dir:DIR` work as a pair wherever pytest starts."""
    pytester.makeini("[pytest]\n")
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    args = ("-p", "no:cacheprovider", "--rootdir", str(pytester.path), "-c", str(pytester.path / "tox.ini"))
    first = pytester.runpytest("--violin-model=oracle", "--violin-limit=3", "--violin-save-outputs=rec", *args)
    first.assert_outcomes(passed=3)
    assert len(list((sub / "rec").rglob("*.png"))) == 3
    second = pytester.runpytest("--violin-model=dir:rec", "--violin-limit=3", *args)
    second.assert_outcomes(passed=3)


def test_python_exception_is_a_crash_with_its_last_frames(tmp_path):
    name = f"violin_glue_model_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        from pytest_violin.errors import GenerationRefused, GenerationUnjudged

        SETTINGS = {"cfg": 7}

        def _steps(settings):
            return settings["steps"]

        def generate(request):
            if request.prompt == "refuse":
                raise GenerationRefused("declined by the safety filter")
            if request.prompt == "later":
                raise GenerationUnjudged("the GPU is busy")
            return _steps(SETTINGS)
    """))
    try:
        model = resolve_model(f"python:{name}:generate", AdapterOptions(rootdir=tmp_path))
        req = GenerationRequest(prompt="p", width=8, height=8, seed=0, sample_id="s", task="color")
        with pytest.raises(GenerationCrashed) as info:
            model.generate(req)
        for prompt, kind in (("refuse", GenerationRefused), ("later", GenerationUnjudged)):
            with pytest.raises(kind) as passed:
                model.generate(GenerationRequest(prompt=prompt, width=8, height=8, seed=0, sample_id="s",
                                                 task="color"))
            assert not isinstance(passed.value, GenerationCrashed)
    finally:
        sys.modules.pop(name, None)
    text = str(info.value)
    # the exception, then the innermost frames (most recent call last) on the one line, none of the adapter's
    assert text.startswith("KeyError: 'steps'; traceback (most recent call last): ") and "\n" not in text, text
    frames = text.split("traceback (most recent call last): ")[1].split(" > ")
    assert [f.split(" in ")[1].split(":")[0] for f in frames] == ["generate", "_steps"]
    assert frames[-1].startswith(f"{tmp_path.name}/{name}.py:") and 'settings["steps"]' in frames[-1]
    assert "python.py" not in text
    assert not info.value.unjudged  # a python: model's exception is its failure, as before


def _ends(call, within=60.0):
    """``call()`` in a helper thread; its result or exception, once it ends (a hang fails after ``within`` s)."""
    done, box = threading.Event(), []

    def run():
        try:
            box.append((True, call()))
        except BaseException as exc:
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(within), f"the call did not end within {within} s"
    return box[0]


@pytest.fixture
def released():
    """An event a hanging model waits on, set at teardown so its abandoned call ends."""
    event = threading.Event()
    yield event
    event.set()


def test_a_python_call_past_its_timeout_is_an_unjudged_error_naming_the_timeout(released):
    calls = []

    def hang(request):
        calls.append(request)
        released.wait()
        return np.zeros((8, 8, 3), np.uint8)

    model = PythonAdapter("glue:hang", hang, timeout=0.2)
    req = GenerationRequest(prompt="p", width=8, height=8, seed=0, sample_id="s", task="color")
    ok, error = _ends(lambda: model.generate(req))
    assert not ok and isinstance(error, GenerationUnjudged) and not isinstance(error, GenerationCrashed)
    assert error.unjudged and "timed out" in str(error) and "0.2 s" in str(error) and "python:glue:hang" in str(error)
    assert len(calls) == 1  # the call was made, then abandoned


def test_violin_timeout_reaches_a_python_model(user_module, released):
    name, root = user_module
    (root / f"{name}_hang.py").write_text("def generate(request):\n    EVENT.wait()\n")
    try:
        model = resolve_model(f"python:{name}_hang:generate", AdapterOptions(rootdir=root, timeout=0.2))
        sys.modules[f"{name}_hang"].EVENT = released
        req = GenerationRequest(prompt="p", width=8, height=8, seed=0, sample_id="s", task="color")
        ok, error = _ends(lambda: model.generate(req))
    finally:
        sys.modules.pop(f"{name}_hang", None)
    assert not ok and isinstance(error, GenerationUnjudged) and "0.2 s" in str(error)


def test_a_python_call_within_its_timeout_keeps_its_image_and_its_exceptions():
    model = PythonAdapter("glue:ok", lambda r: np.full((r.height, r.width, 3), 7, np.uint8), timeout=30)
    req = GenerationRequest(prompt="p", width=8, height=8, seed=0, sample_id="s", task="color")
    assert model.generate(req).shape == (8, 8, 3) and int(model.generate(req).max()) == 7

    def refuse(request):
        raise GenerationRefused("declined")

    with pytest.raises(GenerationRefused):
        PythonAdapter("glue:refuse", refuse, timeout=30).generate(req)


def test_a_cancelled_run_stops_waiting_for_a_python_call(released):
    cancel = threading.Event()
    model = PythonAdapter("glue:hang", lambda r: released.wait(), timeout=3600, cancel=cancel)
    req = GenerationRequest(prompt="p", width=8, height=8, seed=0, sample_id="s", task="color")
    cancel.set()
    ok, error = _ends(lambda: model.generate(req))
    assert not ok and isinstance(error, GenerationCancelled)


#: Answers glue code gets wrong; each is a crash naming what came back.
NOT_IMAGES = {
    "none": (None, "None"),
    "text": ("text", "str"),
    "float-0-255": (np.full((8, 8, 3), 217.0), "float64"),
    "float-negative": (np.full((8, 8, 3), -0.5, np.float32), "float32"),
    "nan": (np.full((8, 8, 3), np.nan), "NaN"),
    "five-channels": (np.zeros((8, 8, 5), np.uint8), "5 channels"),
    "one-dimension": (np.zeros(64, np.uint8), "1-D"),
    "int64": (np.zeros((8, 8, 3), np.int64), "int64"),
    "list": ([1, 2, 3], "list"),
}


@pytest.mark.parametrize("answer, named", NOT_IMAGES.values(), ids=NOT_IMAGES)
def test_a_python_answer_that_is_not_an_image_is_a_crash_naming_it(answer, named):
    model = PythonAdapter("glue:wrong", lambda r: answer, timeout=30)
    with pytest.raises(GenerationCrashed) as info:
        model.generate(GenerationRequest(prompt="p", width=8, height=8, seed=0, sample_id="s", task="color"))
    text = str(info.value)
    assert not info.value.unjudged and "\n" not in text
    assert named in text and "python:glue:wrong" in text and "accepted: " in text
    assert "float in [0, 1]" in text.split("accepted: ")[1]


def test_the_same_wrong_answer_reads_the_same_at_every_size_and_value():
    # the run stops on the same reason in a row: a sample's size or colour must not change the words
    reasons = set()
    for size, value in ((8, 217.0), (24, 12.5), (5, 254.9)):
        model = PythonAdapter("glue:wrong", lambda r, v=value, n=size: np.full((n, n, 3), v), timeout=30)
        with pytest.raises(GenerationCrashed) as info:
            model.generate(GenerationRequest(prompt="p", width=8, height=8, seed=0, sample_id="s", task="color"))
        reasons.add(info.value.reason)
    assert len(reasons) == 1 and "[0, 255]" in reasons.pop()


ACCEPTED = {
    "uint8-rgb": np.full((8, 8, 3), 9, np.uint8),
    "uint8-gray": np.full((8, 8), 9, np.uint8),
    "gray-channel": np.full((8, 8, 1), 9, np.uint8),
    "rgba": np.full((8, 8, 4), 9, np.uint8),
    "uint16": np.full((8, 8, 3), 9 * 257, np.uint16),
    "bool": np.ones((8, 8), bool),
    "float-0-1": np.full((8, 8, 3), 0.5, np.float32),
    "png-bytes": encode_png(np.full((8, 8, 3), 9, np.uint8)),
}


@pytest.mark.parametrize("answer", ACCEPTED.values(), ids=ACCEPTED)
def test_every_answer_as_rgb8_takes_is_still_an_image(answer):
    model = PythonAdapter("glue:ok", lambda r: answer, timeout=30)
    image = model.generate(GenerationRequest(prompt="p", width=8, height=8, seed=0, sample_id="s", task="color"))
    assert np.array_equal(image, as_rgb8(answer))


def test_a_batch_element_that_is_not_an_image_fails_that_request_alone():
    class Batch:
        batch_size = 3

        def generate(self, request):
            raise AssertionError("the batch path is used")

        def generate_batch(self, requests):
            return [np.zeros((8, 8, 3), np.uint8), None, GenerationRefused("declined")]

    model = PythonAdapter("glue:Batch", Batch(), timeout=30)
    req = GenerationRequest(prompt="p", width=8, height=8, seed=0, sample_id="s", task="color")
    image, wrong, refused = model.generate_batch([req, req, req])
    assert image.shape == (8, 8, 3)
    assert isinstance(wrong, GenerationCrashed) and "None" in str(wrong)
    assert isinstance(refused, GenerationRefused)
