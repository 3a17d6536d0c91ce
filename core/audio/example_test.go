package audio_test

import (
	"fmt"
	"math"
	"os"

	"github.com/minatoloader/minatoloader/core/audio"
	"github.com/minatoloader/minatoloader/core/sampler"
)

// The main chain: decode a 22.05 kHz WAV (a 440 Hz tone), resample to
// 16 kHz, log-mel features (NeMo-style: n_fft 512, 25 ms window, 10 ms hop,
// 80 Slaney mels, log(x + 2^-24)), SpecAugment and per-feature
// normalisation. A worker would keep the STFT, the bank and the buffers.
func Example() {
	data, err := os.ReadFile("testdata/tone440_22050.wav")
	if err != nil {
		panic(err)
	}
	w, err := audio.DecodeWAV(data, &audio.DecodeOptions{Mono: true})
	if err != nil {
		panic(err)
	}
	w, err = audio.Resample(w, 16000, nil)
	if err != nil {
		panic(err)
	}
	stft, err := audio.NewSTFT(audio.SpectrogramOptions{
		NFFT: 512, WinLength: 400, HopLength: 160, Window: audio.Hann, Center: true, Power: 2,
	})
	if err != nil {
		panic(err)
	}
	var spec, mel audio.Features
	if err := stft.Spectrogram(&spec, w.Samples); err != nil {
		panic(err)
	}
	bank, err := audio.NewMelBank(audio.MelOptions{
		NFreqs: stft.Bins(), FMin: 0, FMax: 8000, NMels: 80, SampleRate: 16000,
		Norm: audio.MelNormSlaney, Scale: audio.MelSlaney,
	})
	if err != nil {
		panic(err)
	}
	if err := bank.Apply(&mel, spec); err != nil {
		panic(err)
	}
	if err := audio.Log(mel.Data, math.Exp2(-24), audio.LogAdd); err != nil {
		panic(err)
	}
	loudest := argmax(mel.Row(mel.Frames / 2))
	rng := sampler.NewRNG(0, 0, 0, 0) // a pipeline step uses &ctx.Rand
	if err := audio.SpecAugment(&mel, audio.SpecAugmentOptions{FreqMasks: 2, FreqMaskParam: 27, TimeMasks: 2, TimeMaskParam: 10, P: 1}, &rng); err != nil {
		panic(err)
	}
	if err := audio.NormalizePerFeature(&mel, 1e-5); err != nil {
		panic(err)
	}
	fmt.Printf("%d Hz, %d samples\n", w.Rate, len(w.Samples))
	fmt.Printf("spectrogram %dx%d, log-mel %dx%d\n", spec.Frames, spec.Bins, mel.Frames, mel.Bins)
	// Filter m spans mel points m to m+2 of 82 equally spaced up to 8 kHz.
	step := audio.HzToMel(8000, audio.MelSlaney) / 81
	lo := audio.MelToHz(float64(loudest)*step, audio.MelSlaney)
	hi := audio.MelToHz(float64(loudest+2)*step, audio.MelSlaney)
	fmt.Printf("loudest mel filter %d spans %.0f-%.0f Hz\n", loudest, lo, hi)
	// Output:
	// 16000 Hz, 8000 samples
	// spectrogram 51x257, log-mel 51x80
	// loudest mel filter 11 spans 410-484 Hz
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
