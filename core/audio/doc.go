// Package audio is minatoloader's native audio preprocessing, in pure Go:
// WAV decoding, resampling, pad/trim, STFT spectrograms, mel filter banks,
// log, SpecAugment masking, frame splicing and per-feature normalisation.
//
//	WAV bytes --DecodeWAV--> Waveform (float32, planar, [-1, 1))
//	   --Resampler--> Waveform at the target rate
//	   --PadTrim--> fixed length (random offset from *sampler.RNG)
//	   --STFT.Spectrogram--> Features (frames x n_fft/2+1, |X|^power)
//	   --MelBank.Apply--> Features (frames x n_mels)
//	   --Log--> log-mel
//	   --SpecAugment--> masked (draws from *sampler.RNG)
//	   --Splice--> stacked/subsampled frames
//	   --NormalizePerFeature--> zero mean, unit std per bin
//
// Every op is a function of its explicit parameters and its inputs, named
// and defined after torchaudio (or NeMo / MLPerf RNN-T where torchaudio
// has no equivalent), so parity tests can call both sides with the same
// numbers. Randomness comes only from the *sampler.RNG passed in, which a
// pipeline step takes from its Ctx (seeded by seed, epoch, index, step):
// the masks and offsets of a sample never depend on timing or on which
// worker ran it.
//
// Features are time-major (row t is frame t), the transpose of
// torchaudio's (freq, time). Ops that produce a new shape write into a
// caller-provided *Features or *Waveform and reuse its capacity, so a
// worker that keeps its buffers (and its own STFT, which is not safe for
// concurrent use) allocates nothing per sample in steady state. Resampler
// and MelBank are immutable and may be shared.
//
// Measured costs (2-core Xeon, shared; go test -bench . ./core/audio/),
// for 1 s of 16 kHz mono: decoding int16 WAV 16 µs (0.16 ms for 10 s,
// 0 allocations); the spectrogram (n_fft 512, win 400, hop 160: 101
// frames) 0.6 ms; 80 mels 35 µs; log 50 µs; SpecAugment (2+2 masks)
// under 10 µs; the whole chain with reused buffers about 0.8 ms and 0
// allocations (BenchmarkChain). Resampling 1 s of 44.1 kHz to 16 kHz:
// 0.3 ms (ResampleDefault), 2.8 ms (ResampleKaiserBest).
//
// Decoders never panic on malformed input; their errors wrap ErrTruncated,
// ErrFormat, ErrBitDepth and the other Err* values, and are fuzzed
// (FuzzDecodeWAV).
package audio
