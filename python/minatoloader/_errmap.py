"""The exception the user sees for an error of a worker process.

torch's DataLoader re-raises an exception from a worker as the user's own
exception type, with the worker's traceback in the message
(``torch._utils.ExceptionWrapper.reraise``), and reports a dead worker as a
RuntimeError. These functions do the same from the library's structured
account of an error (``Error.detail``, from ``ml_last_error_detail``) or,
for iterable datasets, from the worker's own "module:qualname" and
traceback: never from the message text.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from .errors import Error


class _ReadableMessage(str):
    """A str whose repr is itself: KeyError's str() is the repr of its
    argument, which would print the traceback on one line with its newlines
    escaped (torch's ``KeyErrorMessage``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return self


def _resolve(module: str, qualname: str) -> type[Exception] | None:
    """The exception class module.qualname, None unless it imports and is
    an Exception subclass."""
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:  # noqa: BLE001 - any failure means "not resolvable"
        return None
    return obj if isinstance(obj, type) and issubclass(obj, Exception) else None


def build_user_exception(
    module: str,
    qualname: str,
    traceback: str,
    *,
    worker: int,
    pid: int | None,
    where: str,
    index: int | None = None,
) -> BaseException:
    """The exception to raise in the main process for an exception of type
    module.qualname that worker `worker` (process `pid`) raised `where`
    ("while loading sample 13", "in worker_init_fn", ...), with the worker's
    traceback text, as torch's ExceptionWrapper.reraise builds it:

        Caught ValueError in DataLoader worker process 1 (pid 4242) while
        loading sample 13.
        Original Traceback (most recent call last): ...

    The user's type when it can be imported and built from that one message
    (or from ``message=``, for types that take it so), else RuntimeError.
    ``sample_index`` is set to `index` when given."""
    name = qualname.rsplit(".", 1)[-1]
    at = f" (pid {pid})" if pid is not None else ""
    msg = f"Caught {name} in DataLoader worker process {worker}{at} {where}.\nOriginal {traceback.rstrip()}"
    cls = _resolve(module, qualname)
    exc: BaseException | None = None
    if cls is not None:
        if issubclass(cls, KeyError):
            msg = _ReadableMessage(msg)
        elif getattr(cls, "message", None):
            try:
                exc = cls(message=msg)  # type: ignore[call-arg]
            except Exception:  # noqa: BLE001 - falls back to cls(msg)
                exc = None
        if exc is None:
            try:
                exc = cls(msg)
            except Exception:  # noqa: BLE001 - torch raises RuntimeError then
                exc = None
    if exc is None:
        exc = RuntimeError(str(msg))
    if index is not None:
        try:
            exc.sample_index = index  # type: ignore[attr-defined]
        except AttributeError:  # a type with __slots__ and no __dict__
            pass
    return exc


def _budget_text(detail: dict[str, Any]) -> str:
    """The skip budget's words when the error ended the epoch over it, as
    the library's message says them (sched.BudgetError), else ""."""
    budget = detail.get("max_skipped")
    if budget is None:
        return ""
    return f" (more than {budget} samples of this epoch failed (on_error=skip, max_skipped={budget}); the last one)"


def user_exception(err: Error, exit_report: Callable[[int | None], str] | None) -> BaseException:
    """The exception to raise for `err`, from ``err.detail`` only: for a
    Python exception in a worker, the user's exception (build_user_exception,
    with the sample's index); for a dead worker, torch's RuntimeError,
    completed with ``exit_report(pid)`` (how the process ended) when that is
    not empty; else err itself."""
    detail = err.detail
    if not detail:
        return err
    kind = detail.get("kind")
    python = detail.get("python")
    index = detail.get("index")
    if kind == "python_exception" and isinstance(python, dict):
        if detail.get("init"):
            where = "in worker_init_fn"
        else:
            where = f"while loading sample {index}{_budget_text(detail)}"
        return build_user_exception(
            str(python.get("module", "")),
            str(python.get("qualname", "")),
            str(python.get("traceback", "")),
            worker=int(detail.get("worker") or 0),
            pid=detail.get("pid"),
            where=where,
            index=index,
        )
    if kind == "worker_died":
        pid = detail.get("pid")
        report = exit_report(pid) if exit_report is not None else ""
        return RuntimeError(f"DataLoader worker (pid(s) {pid}) exited unexpectedly" + (f" ({report})" if report else ""))
    return err


__all__ = ["build_user_exception", "user_exception"]
