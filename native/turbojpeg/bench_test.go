package turbojpeg

import (
	"bytes"
	"image"
	"image/jpeg"
	"sync"
	"syscall"
	"testing"
	"time"
)

var benchJPEG = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, photoRGBA(1024, 768), &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

// BenchmarkDecode decodes one 1024x768 4:2:0 JPEG (quality 90) to RGB.
// image/jpeg is the naive baseline: "imagejpeg" stops at its YCbCr image,
// "imagejpeg_rgb" adds the conversion to the RGB rows the others return.
// ms/img is wall time per image on one goroutine, except in the _parallel
// case (GOMAXPROCS goroutines); cpu-ms/img is the process's CPU time per
// image (GC included), which other load on a shared machine disturbs less.
//
//	go test -tags turbojpeg -run '^$' -bench Decode -benchtime 3s ./native/turbojpeg/
func BenchmarkDecode(b *testing.B) {
	data := benchJPEG()
	var cpu0 time.Duration
	startCPU := func() { cpu0 = cpuTime() }
	msPerImage := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/img")
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/img")
	}
	turbo := func(name string, opts Options, reuse bool) {
		b.Run(name, func(b *testing.B) {
			if !Available() {
				b.Skip(ErrUnavailable)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var dst []uint8
			startCPU()
			for b.Loop() {
				_, _, pix, err := DecodeInto(dst, data, &opts)
				if err != nil {
					b.Fatal(err)
				}
				if reuse {
					dst = pix
				}
			}
			msPerImage(b)
		})
	}
	turbo("turbojpeg_full", Options{}, false)
	turbo("turbojpeg_full_reuse", Options{}, true)
	turbo("turbojpeg_full_fastupsample", Options{FastUpsample: true}, true)
	turbo("turbojpeg_min224", Options{MinW: 224, MinH: 224}, false)
	b.Run("turbojpeg_min224_parallel", func(b *testing.B) {
		if !Available() {
			b.Skip(ErrUnavailable)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		startCPU()
		b.RunParallel(func(pb *testing.PB) {
			var dst []uint8
			opts := &Options{MinW: 224, MinH: 224}
			for pb.Next() {
				_, _, pix, err := DecodeInto(dst, data, opts)
				if err != nil {
					b.Error(err)
					return
				}
				dst = pix
			}
		})
		msPerImage(b)
	})
	b.Run("imagejpeg", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		startCPU()
		for b.Loop() {
			if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
		msPerImage(b)
	})
	b.Run("imagejpeg_rgb", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		startCPU()
		for b.Loop() {
			img, err := jpeg.Decode(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			ycc := img.(*image.YCbCr)
			pix := make([]uint8, 0, 1024*768*3)
			for y := 0; y < 768; y++ {
				for x := 0; x < 1024; x++ {
					r, g, bl := ycbcrToRGB(ycc, x, y)
					pix = append(pix, r, g, bl)
				}
			}
		}
		msPerImage(b)
	})
}

// ycbcrToRGB is image/color's YCbCrToRGB at one pixel of a 4:2:0 image,
// without the interface call of At.
func ycbcrToRGB(img *image.YCbCr, x, y int) (uint8, uint8, uint8) {
	yi := img.YOffset(x, y)
	ci := img.COffset(x, y)
	yy := int32(img.Y[yi]) * 0x10101
	cb := int32(img.Cb[ci]) - 128
	cr := int32(img.Cr[ci]) - 128
	clamp := func(v int32) uint8 {
		if uint32(v)&0xff000000 == 0 {
			return uint8(v >> 16)
		}
		return uint8(^(v >> 31))
	}
	return clamp(yy + 91881*cr), clamp(yy - 22554*cb - 46802*cr), clamp(yy + 116130*cb)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeConfig reads the header of the same file.
func BenchmarkDecodeConfig(b *testing.B) {
	if !Available() {
		b.Skip(ErrUnavailable)
	}
	data := benchJPEG()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeConfig(data); err != nil {
			b.Fatal(err)
		}
	}
}
