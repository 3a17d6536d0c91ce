"""minatoloader.DataLoader keeps torch's constructor signature exactly."""

import inspect

import torch

import minatoloader


def _shape(sig: inspect.Signature) -> list:
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def test_names_kinds_defaults_match_torch() -> None:
    ours = inspect.signature(minatoloader.DataLoader.__init__)
    theirs = inspect.signature(torch.utils.data.DataLoader.__init__)
    assert _shape(ours) == _shape(theirs)


def test_full_signature_matches_torch() -> None:
    ours = inspect.signature(minatoloader.DataLoader.__init__)
    theirs = inspect.signature(torch.utils.data.DataLoader.__init__)
    assert ours == theirs, f"\nours:   {ours}\ntorch:  {theirs}"


def test_public_names() -> None:
    for name in (
        "DataLoader",
        "NativeLoader",
        "SyntheticDataset",
        "counters",
        "__version__",
        "InvalidArgumentError",
        "SampleError",
        "ClosedError",
        "ForkedError",
        "NoMemoryError",
        "InternalError",
    ):
        assert hasattr(minatoloader, name), name
    assert minatoloader.__version__ == "0.1.0"
    assert issubclass(minatoloader.InvalidArgumentError, ValueError)
    assert issubclass(minatoloader.SampleError, RuntimeError)
    assert issubclass(minatoloader.ClosedError, RuntimeError)
    assert issubclass(minatoloader.ForkedError, RuntimeError)
    assert issubclass(minatoloader.NoMemoryError, MemoryError)
    assert issubclass(minatoloader.InternalError, RuntimeError)
