package datasets

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/minatoloader/minatoloader/core/audio"
	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

func init() {
	builders["audio_folder"] = func(d config.Dataset) (pipeline.Source, error) {
		exts := d.Extensions
		if len(exts) == 0 {
			exts = AudioExtensions
		}
		classes, files, err := ScanFolder(d.Root, exts)
		if err != nil {
			return nil, err
		}
		return newAudioSource(d, files, classes)
	}
}

// audioSource decodes WAV files (down-mixed to mono) and runs an audio
// chain. Fields: "features" (frames x bins float32, time-major; the
// waveform itself when the chain has no spectrogram), "length" (int64: the
// frames that came from the recording before padding) and "label" (int64).
type audioSource struct {
	files   []File
	classes []string
	limit   int64 // max_file_bytes
	out     int64 // max_sample_bytes: the waveform or features of any step
	fields  []batch.FieldSpec
	steps   []pipeline.Step
}

func (s *audioSource) Len() int64                { return int64(len(s.files)) }
func (s *audioSource) Fields() []batch.FieldSpec { return s.fields }
func (s *audioSource) Steps() []pipeline.Step    { return s.steps }
func (s *audioSource) Classes() []string         { return s.classes }

func (s *audioSource) Load(c *pipeline.Ctx, index int64, smp *pipeline.Sample) error {
	f := s.files[index]
	data, err := readFile(f.Path, s.limit)
	if err != nil {
		return err
	}
	smp.State = data
	binary.LittleEndian.PutUint64(smp.Fields[2].Data, uint64(f.Label))
	return nil
}

// audioState is a sample's working value: the waveform until the
// spectrogram, then the features; valid is the count of samples (then
// frames) that came from the recording.
type audioState struct {
	wave  audio.Waveform
	feat  audio.Features
	valid int
	spec  bool
	path  string // the file, for errors
}

// fits checks that op's output of n float32 values (what describes them)
// is within max_sample_bytes, before it is allocated.
func (s *audioSource) fits(st *audioState, op string, n int64, what string) error {
	if b := 4 * n; n < 0 || b > s.out {
		return outputError(st.path, op, what, b, s.out)
	}
	return nil
}

// audioOp is one parsed op of an audio chain.
type audioOp struct {
	Op           string  `json:"op"`
	Rate         int     `json:"rate"`
	Length       int     `json:"length"`
	RandomOffset bool    `json:"random_offset"`
	NFFT         int     `json:"n_fft"`
	WinLength    int     `json:"win_length"`
	HopLength    int     `json:"hop_length"`
	Window       string  `json:"window"`
	Power        float64 `json:"power"`
	NMels        int     `json:"n_mels"`
	SampleRate   int     `json:"sample_rate"`
	FMin         float64 `json:"f_min"`
	FMax         float64 `json:"f_max"`
	Norm         string  `json:"norm"`
	MelScale     string  `json:"mel_scale"`
	Eps          float64 `json:"eps"`
	Param        int     `json:"param"`
	Count        int     `json:"count"`
	Stack        int     `json:"stack"`
	Subsample    int     `json:"subsample"`
}

var audioOps = []string{"resample", "pad_trim", "spectrogram", "mel", "log", "frequency_masking", "time_masking",
	"frame_splicing", "normalize_features"}

func newAudioSource(d config.Dataset, files []File, classes []string) (*audioSource, error) {
	s := &audioSource{files: files, classes: classes, limit: d.MaxFileBytes, out: d.MaxSampleBytes}
	steps := []pipeline.Step{{Name: "decode_wav", Fn: s.decode}}
	rate := 0     // the sample rate, once fixed by resample
	length := 0   // samples, once fixed by pad_trim
	frames := 0   // after the spectrogram
	bins := 0     // features per frame after the spectrogram
	spec := false // past the spectrogram
	for i, raw := range d.Transforms {
		name, err := opName(raw, i)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(audioOps, name) {
			return nil, opError(i, name, "unknown audio op (known: %v)", audioOps)
		}
		var o audioOp
		if err := decodeOp(raw, i, name, &o); err != nil {
			return nil, err
		}
		waveOnly := name == "resample" || name == "pad_trim" || name == "spectrogram"
		if waveOnly && spec {
			return nil, opError(i, name, "works on the waveform: put it before spectrogram")
		}
		if !waveOnly && !spec {
			return nil, opError(i, name, "works on features: put it after spectrogram")
		}
		var step func(c *pipeline.Ctx, st *audioState) error
		switch name {
		case "resample":
			if o.Rate < 1 {
				return nil, opError(i, name, "rate must be >= 1, got %d", o.Rate)
			}
			if length > 0 {
				return nil, opError(i, name, "put resample before pad_trim (the length is in samples of the final rate)")
			}
			rate = o.Rate
			var mu sync.Mutex
			cache := map[int]*audio.Resampler{}
			to := o.Rate
			step = func(c *pipeline.Ctx, st *audioState) error {
				if st.wave.Rate == to {
					return nil
				}
				mu.Lock()
				r, ok := cache[st.wave.Rate]
				if !ok {
					var err error
					if r, err = audio.NewResampler(st.wave.Rate, to, nil); err != nil {
						mu.Unlock()
						return err
					}
					cache[st.wave.Rate] = r
				}
				mu.Unlock()
				n := int64(r.OutLen(st.wave.Frames())) * int64(st.wave.Channels)
				if err := s.fits(st, name, n, fmt.Sprintf("%d Hz -> %d Hz: %d samples", st.wave.Rate, to, n)); err != nil {
					return err
				}
				var out audio.Waveform
				if err := r.ResampleWaveform(&out, st.wave); err != nil {
					return err
				}
				st.valid = out.Frames()
				st.wave = out
				return nil
			}
		case "pad_trim":
			if o.Length < 1 {
				return nil, opError(i, name, "length must be >= 1, got %d", o.Length)
			}
			if b := 4 * int64(o.Length); b > d.MaxSampleBytes {
				return nil, opError(i, name, "length %d: %d bytes of float32, more than max_sample_bytes (%d)", o.Length, b, d.MaxSampleBytes)
			}
			length = o.Length
			opts := audio.PadTrimOptions{Length: o.Length, Trim: audio.TrimStart}
			if o.RandomOffset {
				opts.Trim = audio.TrimRandom
			}
			step = func(c *pipeline.Ctx, st *audioState) error {
				var out audio.Waveform
				if err := audio.PadTrim(&out, st.wave, opts, &c.Rand); err != nil {
					return err
				}
				st.valid = min(st.valid, opts.Length)
				st.wave = out
				return nil
			}
		case "spectrogram":
			if length == 0 && d.Collate != "pad" {
				return nil, opError(i, name, "samples differ in length: put pad_trim before spectrogram, or set collate to \"pad\"")
			}
			win := map[string]audio.Window{"hann": audio.Hann, "hamming": audio.Hamming, "": audio.Hann}
			w, ok := win[o.Window]
			if !ok {
				return nil, opError(i, name, "window must be \"hann\" or \"hamming\", got %q", o.Window)
			}
			if o.Power == 0 {
				o.Power = 2
			}
			so := audio.SpectrogramOptions{NFFT: o.NFFT, WinLength: o.WinLength, HopLength: o.HopLength, Window: w,
				Center: true, PadMode: audio.PadReflect, Power: o.Power}
			proto, err := audio.NewSTFT(so)
			if err != nil {
				return nil, opError(i, name, "%v", err)
			}
			frames = -1 // varies, padded per batch
			if length > 0 {
				if frames, err = proto.NumFrames(length); err != nil {
					return nil, opError(i, name, "%v", err)
				}
			}
			bins = proto.Bins()
			spec = true
			pool := sync.Pool{New: func() any { t, _ := audio.NewSTFT(so); return t }}
			hop := o.HopLength
			step = func(c *pipeline.Ctx, st *audioState) error {
				t := pool.Get().(*audio.STFT)
				defer pool.Put(t)
				nf, err := t.NumFrames(len(st.wave.Samples))
				if err != nil {
					return err
				}
				if err := s.fits(st, name, int64(nf)*int64(t.Bins()), fmt.Sprintf("%d frames x %d bins", nf, t.Bins())); err != nil {
					return err
				}
				var f audio.Features
				if err := t.Spectrogram(&f, st.wave.Channel(0)); err != nil {
					return err
				}
				st.feat, st.spec = f, true
				st.valid = min(f.Frames, st.valid/hop+1)
				return nil
			}
		case "mel":
			if o.SampleRate == 0 {
				o.SampleRate = rate
			}
			if o.SampleRate == 0 {
				return nil, opError(i, name, "sample_rate is needed (or a resample op before)")
			}
			if o.FMax == 0 {
				o.FMax = float64(o.SampleRate) / 2
			}
			norm := map[string]audio.MelNorm{"": audio.MelNormNone, "slaney": audio.MelNormSlaney}
			scale := map[string]audio.MelScale{"": audio.MelHTK, "htk": audio.MelHTK, "slaney": audio.MelSlaney}
			n, ok1 := norm[o.Norm]
			sc, ok2 := scale[o.MelScale]
			if !ok1 || !ok2 {
				return nil, opError(i, name, "norm must be \"\" or \"slaney\", mel_scale \"htk\" or \"slaney\"; got %q, %q", o.Norm, o.MelScale)
			}
			bank, err := audio.NewMelBank(audio.MelOptions{NFreqs: bins, FMin: o.FMin, FMax: o.FMax, NMels: o.NMels,
				SampleRate: o.SampleRate, Norm: n, Scale: sc})
			if err != nil {
				return nil, opError(i, name, "%v", err)
			}
			bins = o.NMels
			nmels := o.NMels
			step = func(c *pipeline.Ctx, st *audioState) error {
				if err := s.fits(st, name, int64(st.feat.Frames)*int64(nmels), fmt.Sprintf("%d frames x %d mels", st.feat.Frames, nmels)); err != nil {
					return err
				}
				var f audio.Features
				if err := bank.Apply(&f, st.feat); err != nil {
					return err
				}
				st.feat = f
				return nil
			}
		case "log":
			if o.Eps <= 0 {
				return nil, opError(i, name, "eps must be > 0, got %v", o.Eps)
			}
			eps := o.Eps
			step = func(c *pipeline.Ctx, st *audioState) error { return audio.Log(st.feat.Data, eps, audio.LogAdd) }
		case "frequency_masking", "time_masking":
			if o.Param < 0 || o.Count < 0 {
				return nil, opError(i, name, "param and count must be >= 0, got %d, %d", o.Param, o.Count)
			}
			axis := audio.AxisFreq
			if name == "time_masking" {
				axis = audio.AxisTime
			}
			param, count := o.Param, o.Count
			step = func(c *pipeline.Ctx, st *audioState) error {
				for range count {
					if err := audio.MaskAlongAxis(&st.feat, axis, param, 1, 0, &c.Rand); err != nil {
						return err
					}
				}
				return nil
			}
		case "frame_splicing":
			if o.Stack < 1 || o.Subsample < 1 {
				return nil, opError(i, name, "stack and subsample must be >= 1, got %d, %d", o.Stack, o.Subsample)
			}
			stack, sub := o.Stack, o.Subsample
			if frames > 0 {
				frames = (frames + sub - 1) / sub
			}
			bins *= stack
			step = func(c *pipeline.Ctx, st *audioState) error {
				nf := (int64(st.feat.Frames) + int64(sub) - 1) / int64(sub)
				nb := int64(st.feat.Bins) * int64(stack)
				if err := s.fits(st, name, nf*nb, fmt.Sprintf("%d frames x %d values", nf, nb)); err != nil {
					return err
				}
				var f audio.Features
				if err := audio.Splice(&f, st.feat, stack, sub); err != nil {
					return err
				}
				st.feat = f
				st.valid = (st.valid + sub - 1) / sub
				return nil
			}
		case "normalize_features":
			eps := o.Eps
			if eps == 0 {
				eps = 1e-5
			}
			step = func(c *pipeline.Ctx, st *audioState) error { return audio.NormalizePerFeature(&st.feat, eps) }
		}
		steps = append(steps, pipeline.Step{Name: name, Fn: func(c *pipeline.Ctx, smp *pipeline.Sample) error {
			return step(c, smp.State.(*audioState))
		}})
	}
	var feat batch.FieldSpec
	switch {
	case spec:
		feat = batch.FieldSpec{Name: "features", DType: config.DTypes["float32"], Shape: []int64{int64(frames), int64(bins)}}
	case length > 0:
		feat = batch.FieldSpec{Name: "features", DType: config.DTypes["float32"], Shape: []int64{int64(length)}}
	case d.Collate == "pad":
		feat = batch.FieldSpec{Name: "features", DType: config.DTypes["float32"], Shape: []int64{-1}}
	default:
		return nil, fmt.Errorf("config: option \"dataset.transforms\": recordings differ in length: add pad_trim, or set collate to \"pad\"")
	}
	steps = append(steps, pipeline.Step{Name: "output", Fn: func(c *pipeline.Ctx, smp *pipeline.Sample) error {
		st := smp.State.(*audioState)
		src, shape := st.wave.Samples, []int64{int64(len(st.wave.Samples))}
		if st.spec {
			src, shape = st.feat.Data, []int64{int64(st.feat.Frames), int64(st.feat.Bins)}
		}
		f := &smp.Fields[0]
		if slices.Contains(f.Shape, -1) { // padding collate: this sample's own size
			f.Shape, f.Data = shape, make([]byte, 4*len(src))
		}
		dst := floats(f.Data)
		if len(src) != len(dst) {
			return fmt.Errorf("features of %d values, want %d (internal)", len(src), len(dst))
		}
		copy(dst, src)
		binary.LittleEndian.PutUint64(smp.Fields[1].Data, uint64(st.valid))
		return nil
	}})
	s.steps = namedSteps(steps, func(i int64) string { return s.files[i].Path })
	s.fields = []batch.FieldSpec{feat, {Name: "length", DType: config.DTypes["int64"]}, {Name: "label", DType: config.DTypes["int64"]}}
	return s, nil
}

func (s *audioSource) decode(c *pipeline.Ctx, smp *pipeline.Sample) error {
	data := smp.State.([]byte)
	path := s.files[smp.Index].Path
	// The decoded float32 samples are bounded by max_sample_bytes (the
	// default, 256 MiB, is audio.DefaultMaxSamples).
	w, err := audio.DecodeWAV(data, &audio.DecodeOptions{Mono: true, MaxSamples: int(max(1, min(s.out/4, math.MaxInt32)))})
	if err != nil {
		return fmt.Errorf("%q: %w", path, err)
	}
	smp.State = &audioState{wave: w, valid: w.Frames(), path: path}
	return nil
}
