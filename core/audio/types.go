package audio

import "fmt"

// Waveform is decoded audio: float32 samples, planar (channel-major).
// Channel c occupies Samples[c*n : (c+1)*n] with n = Frames(), the layout
// of torchaudio.load's (channels, time) tensor.
type Waveform struct {
	Rate     int // samples per second per channel
	Channels int
	Samples  []float32
}

// Frames is the number of samples per channel (0 when Channels < 1).
func (w Waveform) Frames() int {
	if w.Channels < 1 {
		return 0
	}
	return len(w.Samples) / w.Channels
}

// Channel returns channel c's samples, sharing w.Samples; c must be in
// [0, Channels).
func (w Waveform) Channel(c int) []float32 {
	n := w.Frames()
	return w.Samples[c*n : (c+1)*n : (c+1)*n]
}

// check reports whether w is well formed.
func (w Waveform) check() error {
	if w.Rate <= 0 {
		return fmt.Errorf("audio: waveform rate must be > 0, got %d", w.Rate)
	}
	if w.Channels < 1 {
		return fmt.Errorf("audio: waveform channels must be >= 1, got %d", w.Channels)
	}
	if len(w.Samples)%w.Channels != 0 {
		return fmt.Errorf("audio: %d samples is not a whole number of frames of %d channels", len(w.Samples), w.Channels)
	}
	return nil
}

// Features is a time-major matrix: Frames rows of Bins values each, row t
// at Data[t*Bins : (t+1)*Bins]. A spectrogram has Bins = n_fft/2+1, a
// mel spectrogram Bins = n_mels. It is the transpose of torchaudio's
// (freq, time) layout.
type Features struct {
	Frames, Bins int
	Data         []float32
}

// Resize sets the shape to frames x bins, reusing Data's capacity when it
// suffices (no allocation) and allocating otherwise. Contents are
// unspecified afterwards.
func (f *Features) Resize(frames, bins int) {
	f.Frames, f.Bins = frames, bins
	f.Data = grow(f.Data, frames*bins)
}

// Row returns frame t, sharing Data.
func (f Features) Row(t int) []float32 {
	return f.Data[t*f.Bins : (t+1)*f.Bins : (t+1)*f.Bins]
}

func (f Features) check() error {
	if f.Frames < 0 || f.Bins < 0 || len(f.Data) != f.Frames*f.Bins {
		return fmt.Errorf("audio: features %dx%d do not match %d values", f.Frames, f.Bins, len(f.Data))
	}
	return nil
}

// grow returns s resized to n, reusing its capacity when it suffices.
func grow(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float32, n)
}
