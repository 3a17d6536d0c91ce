"""The library's structured account of an error (``Error.detail``, from
ml_last_error_detail) and the user's exception built from it alone
(``_errmap``): the same exceptions the message-parsing code produced, with
the expectations of test_py_errors.py and test_iterable_errors.py."""

from __future__ import annotations

import importlib
import os
import re
import traceback
from typing import Any, Callable, Iterator

import numpy as np
import pytest
from PIL import Image
from pydatasets import Dies, Indexed, bad_init

import minatoloader
from minatoloader import NativeLoader, SampleError, SyntheticDataset, _native
from minatoloader import datasets as mds
from minatoloader import transforms as T
from minatoloader._errmap import build_user_exception, user_exception
from minatoloader.errors import Error

DETAIL_KEYS = ["status", "kind", "message", "index", "path", "step", "python", "worker", "pid", "init",
               "skipped", "max_skipped"]


@pytest.fixture
def raised(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Error]]:
    """Every Error the bindings build from a status, whichever thread and
    whichever loader code path made the call."""
    seen: list[Error] = []
    real = _native.error_for

    def record(lib: Any, rc: int, call: str) -> Error:
        err = real(lib, rc, call)
        seen.append(err)
        return err

    monkeypatch.setattr(_native, "error_for", record)
    yield seen


def _sample_errors(seen: list[Error]) -> list[SampleError]:
    return [e for e in seen if isinstance(e, SampleError)]


def _legacy_reraise(err: BaseException, exit_report: Callable[[int | None], str] | None) -> BaseException:
    """The message-parsing code this replaces (``_pyloader._reraise`` before
    the detail existed), kept here only as the oracle the new code must
    reproduce (less the C call's name in the skip budget's words)."""
    pyexc = re.compile(
        r'sample (-?\d+): step "load": (?:(worker_init_fn or setup) failed in DataLoader worker process \d+ '
        r"\(pid \d+\): )?python exception ([\w.]+):([\w.<>]+) in worker (\d+) \(pid (\d+)\)\n(.*)",
        re.S,
    )
    text = str(err)
    m = pyexc.search(text)
    if m:
        index, init, module, qualname, wid, pid, tb = m.groups()
        prefix = text[: m.start()]
        # The one deliberate change: the C call's name ("ml_loader_next: ")
        # no longer shows inside the user's exception.
        prefix = prefix.removeprefix("ml_loader_next: ")
        budget = " (" + prefix.strip().rstrip(":") + ")" if "max_skipped" in prefix else ""
        where = "in worker_init_fn" if init else f"while loading sample {index}{budget}"
        msg = (f"Caught {qualname.rsplit('.', 1)[-1]} in DataLoader worker process {wid} (pid {pid}) "
               f"{where}.\nOriginal {tb.rstrip()}")
        try:
            obj: Any = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            exc = obj(msg)
            exc.sample_index = int(index)
            return exc  # type: ignore[no-any-return]
        except Exception:  # noqa: BLE001 - as the old code
            return RuntimeError(msg)
    m = re.search(r"DataLoader worker (\d+) \(pid (\d+)\) exited unexpectedly", text)
    if m:
        report = exit_report(int(m.group(2))) if exit_report is not None else ""
        return RuntimeError(
            f"DataLoader worker (pid(s) {m.group(2)}) exited unexpectedly" + (f" ({report})" if report else ""))
    return err


def _same(a: BaseException, b: BaseException) -> None:
    assert type(a) is type(b), (a, b)
    assert str(a) == str(b)
    assert getattr(a, "sample_index", None) == getattr(b, "sample_index", None)


def _check_detail(err: Error) -> dict[str, Any]:
    d = err.detail
    assert d is not None and list(d) == DETAIL_KEYS, d
    assert d["status"] == err.status and d["message"] == str(err)
    return d


# ------------------------------------------------------------ native samples


@pytest.mark.parametrize("workers", [1, 4])
def test_native_sample_detail(workers: int) -> None:
    with NativeLoader(SyntheticDataset(40, fail_indices=[17]), 4, workers=workers) as loader:
        with pytest.raises(SampleError) as info:
            list(loader)
    err = info.value
    d = _check_detail(err)
    assert d["kind"] == "sample" and d["status"] == -3
    assert (err.index, err.path, err.step) == (17, None, "load")
    assert d["python"] is None and d["worker"] is None and d["pid"] is None and d["init"] is False
    assert d["skipped"] is None and d["max_skipped"] is None
    assert user_exception(err, None) is err


def test_file_sample_detail_names_the_file(tmp_path: Any) -> None:
    os.makedirs(tmp_path / "a")
    Image.fromarray(np.zeros((6, 7, 3), np.uint8)).save(tmp_path / "a" / "ok.png")
    bad = tmp_path / "a" / "bad.jpg"
    bad.write_bytes(b"not an image")
    with NativeLoader(mds.ImageFolder(str(tmp_path), [T.CenterCrop(4), T.ToTensor()]), 1) as loader:
        with pytest.raises(SampleError) as info:
            list(loader)
    err = info.value
    d = _check_detail(err)
    assert d["kind"] == "sample"
    assert (err.index, err.path, err.step) == (0, str(bad), "decode")  # bad.jpg sorts first


def test_native_skip_budget_detail() -> None:
    ds = SyntheticDataset(40, fail_indices=[1, 2, 3, 4])
    with NativeLoader(ds, 4, on_error="skip", max_skipped=2) as loader:
        with pytest.raises(SampleError, match="max_skipped=2") as info:
            list(loader)
    err = info.value
    d = _check_detail(err)
    assert d["kind"] == "skip_budget" and (d["skipped"], d["max_skipped"]) == (2, 2)
    assert err.index in (1, 2, 3, 4) and err.step == "load"
    assert user_exception(err, None) is err


def test_argument_error_detail() -> None:
    with pytest.raises(minatoloader.InvalidArgumentError) as info:
        NativeLoader(SyntheticDataset(4), 0)
    d = _check_detail(info.value)
    assert d["kind"] == "invalid_argument" and "batch_size" in d["message"] and d["index"] is None
    assert user_exception(info.value, None) is info.value


def test_python_side_errors_have_no_detail() -> None:
    assert minatoloader.Error("x").detail is None
    e = SampleError("x")
    assert (e.detail, e.index, e.path, e.step) == (None, None, None, None)


# ----------------------------------------------------------- Python workers


@pytest.mark.parametrize("in_order", [True, False])
def test_python_exception_detail(raised: list[Error], in_order: bool) -> None:
    dl = minatoloader.DataLoader(Indexed(40, fail=(13,)), batch_size=4, num_workers=2, in_order=in_order)
    with pytest.raises(ValueError) as info:
        list(dl)
    dl.close()
    (err,) = _sample_errors(raised)
    d = _check_detail(err)
    assert d["kind"] == "python_exception" and not d["init"]
    assert (err.index, err.step, err.path) == (13, "load", None)
    py = d["python"]
    assert (py["module"], py["qualname"]) == ("builtins", "ValueError")
    assert py["traceback"].startswith("Traceback (most recent call last):")
    assert "__getitem__" in py["traceback"] and "sample 13 is broken on purpose" in py["traceback"]
    # Any process of the pool, spares included (num_workers + spare_workers).
    assert isinstance(d["worker"], int) and d["worker"] >= 0
    assert isinstance(d["pid"], int) and d["pid"] not in (0, os.getpid())
    assert d["skipped"] is None and d["max_skipped"] is None

    exc = user_exception(err, None)
    _same(exc, _legacy_reraise(err, None))
    _same(exc, info.value)
    assert str(exc).startswith(
        f"Caught ValueError in DataLoader worker process {d['worker']} (pid {d['pid']}) while loading sample 13.\n"
        "Original Traceback (most recent call last):")
    assert exc.sample_index == 13  # type: ignore[attr-defined]


def test_worker_init_fn_detail(raised: list[Error]) -> None:
    dl = minatoloader.DataLoader(Indexed(8), batch_size=2, num_workers=2, worker_init_fn=bad_init)
    with pytest.raises(RuntimeError, match="init of worker . failed on purpose") as info:
        list(dl)
    dl.close()
    errs = _sample_errors(raised)
    assert errs, raised
    err = errs[0]
    d = _check_detail(err)
    assert d["kind"] == "python_exception" and d["init"] is True
    assert (d["python"]["module"], d["python"]["qualname"]) == ("builtins", "RuntimeError")
    assert f"init of worker {d['worker']} failed on purpose" in d["python"]["traceback"]
    assert isinstance(d["pid"], int)
    exc = user_exception(err, None)
    _same(exc, _legacy_reraise(err, None))
    _same(exc, info.value)
    assert type(exc) is RuntimeError and " in worker_init_fn.\nOriginal Traceback" in str(exc)


@pytest.mark.parametrize("budget", [3, 0.05])
def test_python_skip_budget_detail(raised: list[Error], budget: float) -> None:
    dl = minatoloader.DataLoader(Indexed(40, fail=(1, 2, 3, 4)), batch_size=4, num_workers=2)
    dl.configure(on_error="skip", max_skipped=budget)
    with pytest.raises(ValueError, match="max_skipped") as info:
        list(dl)
    dl.close()
    (err,) = _sample_errors(raised)
    d = _check_detail(err)
    n = 3 if budget == 3 else 2  # 5% of 40
    assert d["kind"] == "python_exception" and (d["skipped"], d["max_skipped"]) == (n, n)
    assert err.index in (1, 2, 3, 4)
    exc = user_exception(err, None)
    _same(exc, _legacy_reraise(err, None))
    _same(exc, info.value)
    assert (f"while loading sample {err.index} (more than {n} samples of this epoch failed "
            f"(on_error=skip, max_skipped={n}); the last one).\nOriginal Traceback") in str(exc)


def test_killed_worker_detail(raised: list[Error]) -> None:
    dl = minatoloader.DataLoader(Dies(40, at=9, how="kill"), batch_size=4, num_workers=2)
    with pytest.raises(RuntimeError, match="exited unexpectedly") as info:
        list(dl)
    dl.close()
    errs = _sample_errors(raised)
    assert errs, raised
    err = errs[0]
    d = _check_detail(err)
    assert d["kind"] == "worker_died" and d["python"] is None and d["init"] is False
    assert isinstance(d["pid"], int) and isinstance(d["worker"], int) and d["worker"] >= 0
    assert f"(pid(s) {d['pid']})" in str(info.value) and "signal 9" in str(info.value)

    def report(pid: int | None) -> str:
        return f"pid {pid}: signal 9"

    for rep in (report, None, lambda pid: ""):
        _same(user_exception(err, rep), _legacy_reraise(err, rep))
    assert str(user_exception(err, report)) == (
        f"DataLoader worker (pid(s) {d['pid']}) exited unexpectedly (pid {d['pid']}: signal 9)")
    assert str(user_exception(err, None)) == f"DataLoader worker (pid(s) {d['pid']}) exited unexpectedly"


# ----------------------------------------------------- build_user_exception


class NeedsTwo(Exception):
    def __init__(self, a: str, b: str) -> None:
        super().__init__(a, b)


class Outer:
    class Inner(Exception):
        pass


class WithMessage(Exception):
    message = "default"

    def __init__(self, *, message: str) -> None:
        super().__init__(message)
        self.message = message


def test_build_user_exception_like_torch() -> None:
    from torch._utils import ExceptionWrapper

    try:
        raise KeyError("missing key")
    except KeyError:
        tb = traceback.format_exc()
        wrapper = ExceptionWrapper(where="in DataLoader worker process 3")
    with pytest.raises(KeyError) as theirs:
        wrapper.reraise()
    exc = build_user_exception("builtins", "KeyError", tb, worker=3, pid=77, where="while loading sample 5", index=5)
    want = f"Caught KeyError in DataLoader worker process 3 (pid 77) while loading sample 5.\nOriginal {tb.rstrip()}"
    # KeyError's str() is repr() of its argument: the message must still
    # print with its real newlines, as torch arranges.
    assert type(exc) is KeyError and str(exc) == want and exc.sample_index == 5  # type: ignore[attr-defined]
    assert str(theirs.value).startswith("Caught KeyError in DataLoader worker process 3.\nOriginal Traceback")
    assert str(theirs.value).split("\nOriginal ", 1)[1].rstrip() == str(exc).split("\nOriginal ", 1)[1]


@pytest.mark.parametrize(
    "module, qualname, want_type",
    [
        ("builtins", "ValueError", ValueError),
        (__name__, "Outer.Inner", Outer.Inner),
        (__name__, "WithMessage", WithMessage),
        (__name__, "NeedsTwo", RuntimeError),  # cannot be built from one message
        ("no_such_module_x", "Err", RuntimeError),
        ("builtins", "len", RuntimeError),  # not an exception type
        ("", "", RuntimeError),
    ],
)
def test_build_user_exception_types(module: str, qualname: str, want_type: type) -> None:
    exc = build_user_exception(module, qualname, "Traceback...\nX: y\n", worker=1, pid=None, where="in worker_init_fn")
    assert type(exc) is want_type
    name = qualname.rsplit(".", 1)[-1]
    assert str(exc) == f"Caught {name} in DataLoader worker process 1 in worker_init_fn.\nOriginal Traceback...\nX: y"
    assert not hasattr(exc, "sample_index")
