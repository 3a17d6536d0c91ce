"""Native audio folders against numpy and torch.stft, on WAV files written here.

Tolerances: int16 PCM decode exact; spectrogram (power 2) within 1e-4 of
the peak of torch.stft in float64; log-mel and per-feature normalisation
within 1e-3 absolute (float32 accumulation over 257 bins, then log).
Features are time-major (frames x bins), the transpose of torchaudio's.
"""

from __future__ import annotations

import math
import os
import wave

import numpy as np
import pytest
import torch

from minatoloader import InvalidArgumentError, NativeLoader, SampleError
from minatoloader import datasets as mds
from minatoloader import transforms as T

RATE = 16000


def _write_wavs(root: str, lengths: list[int], channels: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(2)
    out = []
    for k, n in enumerate(lengths):
        cls = "yes" if k % 2 == 0 else "no"
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        t = np.arange(n) / RATE
        sig = 0.3 * np.sin(2 * math.pi * (200 + 50 * k) * t) + 0.05 * rng.standard_normal(n)
        pcm = np.clip(np.round(sig * 32767), -32768, 32767).astype(np.int16)
        frames = np.repeat(pcm[:, None], channels, axis=1)
        with wave.open(os.path.join(root, cls, f"{k:03d}.wav"), "wb") as w:
            w.setnchannels(channels)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(frames.tobytes())
        out.append(pcm.astype(np.float32) / 32768.0)
    return out


def _mel_fbank(n_freqs: int, n_mels: int, sr: int) -> np.ndarray:
    """torchaudio.functional.melscale_fbanks, HTK scale, norm=None."""
    hz_to_mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)  # noqa: E731
    mel_to_hz = lambda m: 700.0 * (10.0 ** (m / 2595.0) - 1.0)  # noqa: E731
    all_freqs = np.linspace(0, sr // 2, n_freqs)
    f_pts = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2))
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts[None, :] - all_freqs[:, None]
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return np.maximum(0.0, np.minimum(down, up))


def _items(ds: mds.FileDataset, **kw: object) -> list[tuple[np.ndarray, ...]]:
    with NativeLoader(ds, 2, output="numpy", return_indices=True, **kw) as loader:
        return [tuple(x) for batch in loader for x in zip(*batch)]


def test_pcm_decode_and_pad_trim_exact(tmp_path) -> None:
    root = str(tmp_path)
    sigs = _write_wavs(root, [12000, 16000, 20000, 9000], channels=2)
    ds = mds.AudioFolder(root, transform=[T.PadTrim(16000)])
    assert [f["name"] for f in ds.fields] == ["features", "length", "label"]
    order = sorted(range(4), key=lambda k: ("yes" if k % 2 == 0 else "no", k))  # ImageFolder order
    for feat, length, label, idx in _items(ds):
        sig = sigs[order[int(idx)]]
        want = np.zeros(16000, np.float32)
        want[: min(len(sig), 16000)] = sig[:16000]
        np.testing.assert_array_equal(feat, want)
        assert int(length) == min(len(sig), 16000)


def test_log_mel_chain_matches_numpy_and_torch(tmp_path) -> None:
    root = str(tmp_path)
    sigs = _write_wavs(root, [16000, 14000, 17000, 16000])
    chain = [T.PadTrim(16000), T.Spectrogram(n_fft=512, win_length=400, hop_length=160), T.MelScale(n_mels=40, sample_rate=RATE),
             T.Log(1e-6), T.NormalizeFeatures(1e-5)]
    ds = mds.AudioFolder(root, transform=chain)
    assert ds.fields[0]["shape"] == [101, 40]
    order = sorted(range(4), key=lambda k: ("yes" if k % 2 == 0 else "no", k))
    fb = _mel_fbank(257, 40, RATE)
    for feat, length, _, idx in _items(ds):
        x = np.zeros(16000)
        s = sigs[order[int(idx)]][:16000]
        x[: len(s)] = s
        window = torch.hann_window(400, periodic=True, dtype=torch.float64)
        spec = torch.stft(torch.from_numpy(x), n_fft=512, hop_length=160, win_length=400, window=window, center=True,
                          pad_mode="reflect", return_complex=True).abs().pow(2).numpy()  # (257, 101)
        mel = np.log(fb.T @ spec + 1e-6).T  # (101, 40)
        mean, std = mel.mean(0), mel.std(0, ddof=1)
        want = (mel - mean) / (std + 1e-5)
        np.testing.assert_allclose(feat, want, atol=1e-3, rtol=0)
        assert int(length) == min(len(s), 16000) // 160 + 1


def test_spectrogram_matches_torch_stft(tmp_path) -> None:
    root = str(tmp_path)
    sigs = _write_wavs(root, [8000, 8000])
    ds = mds.AudioFolder(root, transform=[T.PadTrim(8000), T.Spectrogram(n_fft=256, hop_length=128)])
    order = [1, 0]  # dataset index -> file written: classes sort as "no", "yes"
    for feat, _, _, idx in _items(ds):
        x = torch.from_numpy(sigs[order[int(idx)]].astype(np.float64))
        want = torch.stft(x, 256, hop_length=128, win_length=256, window=torch.hann_window(256, dtype=torch.float64),
                          center=True, pad_mode="reflect", return_complex=True).abs().pow(2).numpy().T
        np.testing.assert_allclose(feat, want, atol=1e-4 * want.max(), rtol=0)


def test_masks_are_deterministic_per_seed(tmp_path) -> None:
    root = str(tmp_path)
    _write_wavs(root, [16000] * 4)
    chain = [T.PadTrim(16000, random_offset=True), T.Spectrogram(n_fft=400), T.MelScale(n_mels=32),
             T.Log(), T.TimeMasking(20, count=2), T.FrequencyMasking(8)]
    ds = mds.AudioFolder(root, transform=chain)
    a = _items(ds, seed=3, workers=1)
    b = _items(ds, seed=3, workers=4)
    c = _items(ds, seed=4, workers=1)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x[0], y[0])
    assert any(not np.array_equal(x[0], z[0]) for x, z in zip(a, c))


def test_audio_errors(tmp_path) -> None:
    root = str(tmp_path)
    _write_wavs(root, [1000, 1000])
    with pytest.raises(InvalidArgumentError, match="pad_trim"):
        mds.AudioFolder(root, transform=[T.Spectrogram(n_fft=256)])
    with pytest.raises(InvalidArgumentError, match="after spectrogram"):
        mds.AudioFolder(root, transform=[T.PadTrim(1000), T.Log()])
    with open(os.path.join(root, "yes", "bad.wav"), "wb") as f:
        f.write(b"RIFF\x24\x00\x00\x00WAVEfmt ")
    ds = mds.AudioFolder(root, transform=[T.PadTrim(1000)])
    with NativeLoader(ds, 3) as loader, pytest.raises(SampleError, match="bad.wav"):
        list(loader)


def test_padding_collate_pads_to_the_longest_in_batch(tmp_path) -> None:
    root = str(tmp_path)
    sigs = _write_wavs(root, [4000, 7000, 5000, 9000])
    order = [1, 3, 0, 2]  # dataset index -> file written
    with pytest.raises(InvalidArgumentError, match="collate"):
        mds.AudioFolder(root, transform=[T.Spectrogram(n_fft=256, hop_length=128)])
    ds = mds.AudioFolder(root, transform=[T.Spectrogram(n_fft=256, hop_length=128)], collate="pad")
    assert ds.fields[0]["shape"] == [-1, 129]
    with NativeLoader(ds, 2, output="numpy", return_indices=True) as loader:
        batches = list(loader)
    for feats, lengths, _, indices in batches:
        want_frames = [len(sigs[order[int(i)]]) // 128 + 1 for i in indices]
        assert feats.shape == (2, max(want_frames), 129)
        assert lengths.tolist() == want_frames
        for row, n in enumerate(want_frames):
            assert np.all(feats[row, n:] == 0) and np.any(feats[row, :n] != 0)
