"""minatoloader.DataLoader under a real PyTorch Lightning 2-process DDP run.

Lightning injects a DistributedSampler only into ``torch.utils.data.DataLoader``
instances (``_DataConnector._prepare_dataloader``): it re-creates the loader
from the arguments its patched ``__init__`` recorded during
``train_dataloader()``, with ``sampler=DistributedSampler(...)``,
``shuffle=False``, and calls ``sampler.set_epoch`` every epoch. Each rank must
then read its own disjoint half of every epoch, in the sampler's order.

Mid-epoch resume: Lightning stores ``loader.state_dict()`` in the checkpoint
(``FitLoop.on_save_checkpoint``, under ``loops.fit_loop.state_dict.
combined_loader``) when the loader has ``state_dict``/``load_state_dict``
(``lightning_fabric.utilities.types._Stateful``), and on ``fit(ckpt_path=...)``
calls ``load_state_dict`` on the freshly re-created loader before its first
``iter()``; Lightning itself skips nothing, so the loader must yield exactly
the remaining batches. What this asks of the loader:

* it is sized: with a length, Lightning's fetcher does not prefetch, so
  ``state_dict()`` in ``on_train_batch_end`` is taken after exactly the
  batches trained on (``state_dict`` must count batches handed out, not those
  read ahead by workers);
* only global rank 0 writes the checkpoint, and every rank loads that one
  state: the state must not be rank-specific (a position in the epoch, the
  sampler of each rank gives its own shard);
* on resume Lightning calls ``iter()`` (``FitLoop.setup_data``) before
  ``sampler.set_epoch(epoch)`` (``FitLoop.on_advance_start``), so a resume in
  epoch >= 1 needs the loader to put the saved epoch back itself, or to read
  the sampler only when the first batch is asked for.

The trainer runs in a subprocess (a script written to tmp_path): strategy
"ddp" re-runs that script for rank 1, and neither process is pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytorch_lightning")
torch = pytest.importorskip("torch")

N = 48  # samples; a multiple of 2 ranks x BATCH, so DistributedSampler pads nothing
BATCH = 4
EPOCHS = 2
SEED = 7
STEPS_PER_EPOCH = N // 2 // BATCH  # 6 batches per rank per epoch
SAVE_AT = (3, STEPS_PER_EPOCH + 2)  # global steps: mid-epoch 0 and mid-epoch 1
RUN_TIMEOUT_S = 300  # per trainer run; generous, never asserted

SCRIPT = textwrap.dedent(
    """
    import json, os, sys

    import torch
    import pytorch_lightning as pl
    from torch.utils.data import Dataset

    from minatoloader import DataLoader

    cfg = json.loads(sys.argv[1])
    torch.set_num_threads(1)


    class IndexDataset(Dataset):
        \"\"\"Item i is i: the batches say which samples were read.\"\"\"

        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return i


    class Model(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)

        def _log(self, rec):
            path = os.path.join(cfg["out"], "%s-rank%d.jsonl" % (cfg["tag"], self.global_rank))
            with open(path, "a") as f:
                f.write(json.dumps(rec) + "\\n")

        def on_train_start(self):
            dl = self.trainer.train_dataloader
            self._log({"loader": "%s.%s" % (type(dl).__module__, type(dl).__qualname__),
                       "sampler": type(dl.sampler).__qualname__,
                       "world_size": self.trainer.world_size})

        def training_step(self, batch, batch_idx):
            self._log({"epoch": self.current_epoch, "batch_idx": batch_idx, "step": self.global_step,
                       "indices": batch.tolist()})
            return self.layer(batch.float().unsqueeze(1)).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-3)

        def train_dataloader(self):
            return DataLoader(IndexDataset(cfg["n"]), batch_size=cfg["batch"], shuffle=True, num_workers=1)


    class SaveAt(pl.Callback):
        \"\"\"A checkpoint after the batch that makes global_step s, for each s in save_at.\"\"\"

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.global_step in cfg["save_at"]:
                trainer.save_checkpoint(os.path.join(cfg["out"], "step%d.ckpt" % trainer.global_step))


    if __name__ == "__main__":
        pl.seed_everything(cfg["seed"], verbose=False)
        trainer = pl.Trainer(
            accelerator="cpu",
            devices=2,
            strategy="ddp",
            max_epochs=cfg["epochs"],
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[SaveAt()],
        )
        trainer.fit(Model(), ckpt_path=cfg["resume"])
    """
)


def _run(tmp_path: Path, tag: str, save_at: tuple[int, ...] = (), resume: Path | None = None) -> str:
    script = tmp_path / "train.py"
    if not script.exists():
        script.write_text(SCRIPT)
    cfg = {"out": str(tmp_path), "tag": tag, "n": N, "batch": BATCH, "epochs": EPOCHS, "seed": SEED,
           "save_at": list(save_at), "resume": None if resume is None else str(resume)}
    env = dict(os.environ)
    env.pop("PL_GLOBAL_SEED", None)
    env.pop("MASTER_PORT", None)
    env.update({"PYTHONPATH": os.pathsep.join(filter(None, [env.get("PYTHONPATH"), *sys.path])),
                "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "default"})
    proc = subprocess.run([sys.executable, str(script), json.dumps(cfg)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, f"trainer run {tag!r} failed (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stderr


def _records(tmp_path: Path, tag: str, rank: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(line) for line in (tmp_path / f"{tag}-rank{rank}.jsonl").read_text().splitlines()]
    head, batches = lines[0], lines[1:]
    assert "loader" in head, lines
    return head, batches


def _expected_order(rank: int, epoch: int) -> list[int]:
    from torch.utils.data import DistributedSampler

    sampler = DistributedSampler(range(N), num_replicas=2, rank=rank, shuffle=True, seed=SEED)
    sampler.set_epoch(epoch)
    return list(sampler)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, list[dict[str, Any]]], str]:
    """One uninterrupted run of EPOCHS epochs, saving a checkpoint at each of SAVE_AT."""
    out = tmp_path_factory.mktemp("lightning_ddp")
    err = _run(out, "full", save_at=SAVE_AT)
    full: dict[int, list[dict[str, Any]]] = {}
    for rank in (0, 1):
        head, batches = _records(out, "full", rank)
        # Lightning re-created our loader with a DistributedSampler in it.
        assert head == {"loader": "minatoloader.dataloader.DataLoader", "sampler": "DistributedSampler",
                        "world_size": 2}, head
        assert [(b["epoch"], b["batch_idx"]) for b in batches] == [
            (e, i) for e in range(EPOCHS) for i in range(STEPS_PER_EPOCH)
        ], batches
        full[rank] = batches
    return out, full, err


def test_ddp_ranks_read_disjoint_halves(full_run: tuple[Path, dict[int, list[dict[str, Any]]], str]) -> None:
    _, full, err = full_run
    for epoch in range(EPOCHS):
        seen = {rank: [i for b in full[rank] if b["epoch"] == epoch for i in b["indices"]] for rank in (0, 1)}
        for rank in (0, 1):
            assert len(seen[rank]) == N // 2, (epoch, rank, seen)
            # exactly the sampler's shard, in the sampler's order (set_epoch reached it)
            assert seen[rank] == _expected_order(rank, epoch), (epoch, rank, seen[rank])
        assert not set(seen[0]) & set(seen[1]), (epoch, seen)
        assert sorted(seen[0] + seen[1]) == list(range(N)), (epoch, seen)
    assert "not resumable" not in err, err


@pytest.mark.parametrize(
    "step",
    [
        pytest.param(SAVE_AT[0], id="mid-epoch0"),
        pytest.param(
            SAVE_AT[1],
            id="mid-epoch1",
        ),
    ],
)
def test_mid_epoch_resume(full_run: tuple[Path, dict[int, list[dict[str, Any]]], str], step: int) -> None:
    out, full, full_err = full_run
    ckpt = out / f"step{step}.ckpt"
    assert ckpt.exists(), f"no checkpoint at step {step}:\n{full_err}"
    saved = torch.load(ckpt, map_location="cpu", weights_only=False)
    loader_states = saved["loops"]["fit_loop"]["state_dict"].get("combined_loader")
    # Lightning saw the loader as stateful (state_dict/load_state_dict) and stored its state.
    assert loader_states and len(loader_states) == 1, saved["loops"]["fit_loop"]["state_dict"].keys()

    tag = f"resume{step}"
    err = _run(out, tag, resume=ckpt)
    assert "not resumable" not in err, err
    for rank in (0, 1):
        _, resumed = _records(out, tag, rank)
        want = [b for b in full[rank] if b["step"] >= step]
        got_at = [(b["epoch"], b["batch_idx"], b["step"]) for b in resumed]
        want_at = [(b["epoch"], b["batch_idx"], b["step"]) for b in want]
        assert got_at == want_at, (step, rank, got_at, want_at)
        # the same samples, in the same order, as the run that was not interrupted
        assert [b["indices"] for b in resumed] == [b["indices"] for b in want], (
            step, rank, [b["indices"] for b in resumed], [b["indices"] for b in want])
