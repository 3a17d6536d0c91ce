package volume

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// ForegroundCrop is the MLPerf reference's RandBalancedCrop: with
// probability Prob (the reference's oversampling, 0.4) the window is
// centred on a foreground voxel of the label, else placed as RandomCrop
// places it.
//
// Draws, in order:
//  1. u = r.Float64(). If u >= Prob, the uniform draws of RandomCrop
//     follow, and nothing else.
//  2. Otherwise the classes are the distinct label values > 0, sorted
//     ascending. If there are none, the uniform draws follow (Foreground
//     stays false).
//  3. i = r.Below(number of classes) picks class classes[i], as the
//     reference's np.random.choice(np.unique(label[label > 0])) does.
//  4. j = r.Below(count of that class) picks its j-th voxel in C order
//     over the whole label (all channels); its (D, H, W) position is
//     Center.
//  5. Per axis, start = clamp(center - floor(k/2), 0, n-k) when n >= k,
//     so the window stays inside the volume and still holds the voxel;
//     when n < k, start = -floor((k-n)/2) as for RandomCrop.
//
// Where the reference centres on the bounding box of one of the two
// largest connected components of the class (scipy.ndimage), this centres
// on a uniformly drawn voxel of the class: no component labelling, and
// every foreground voxel can be the centre.
//
// Cost: one pass over the label that skips all-zero 32-byte blocks
// (background) and a second, partial one to find voxel j (bytes.Count over
// 4 KiB chunks for uint8 labels): 2.2 ms for a 256^3 uint8 label with 3%
// foreground, against 42 ms for the np.unique/np.flatnonzero way
// (BenchmarkForegroundDraw*). Labels of other types take a slower,
// per-element path through the non-zero blocks.
type ForegroundCrop struct {
	Size [3]int
	Prob float64
}

// Draw returns the window for label (rank >= 3; its last three axes are
// the image's D, H, W).
func (c ForegroundCrop) Draw(r *sampler.RNG, label *Volume) (CropParams, error) {
	if !(c.Prob >= 0 && c.Prob <= 1) {
		return CropParams{}, fmt.Errorf("volume: foreground crop: %w: prob %v not in [0, 1]", ErrParams, c.Prob)
	}
	_, sp, err := label.dims()
	if err != nil {
		return CropParams{}, fmt.Errorf("label: %w", err)
	}
	if err := (CropParams{Size: c.Size}).validate(); err != nil {
		return CropParams{}, err
	}
	uniform := RandomCrop{Size: c.Size}
	if r.Float64() >= c.Prob {
		return uniform.Draw(r, sp)
	}
	classes, counts := foregroundClasses(label)
	if len(classes) == 0 {
		return uniform.Draw(r, sp)
	}
	ci := r.Below(uint64(len(classes)))
	j := r.Below(uint64(counts[ci]))
	flat := nthOf(label, classes[ci], int(j))
	pos := flat % (sp[0] * sp[1] * sp[2])
	center := [3]int{pos / (sp[1] * sp[2]), pos / sp[2] % sp[1], pos % sp[2]}
	p := CropParams{Size: c.Size, Foreground: true, Center: center}
	for a, n := range sp {
		k := c.Size[a]
		if n >= k {
			p.Start[a] = clampInt(center[a]-k/2, 0, n-k)
		} else {
			p.Start[a] = -((k - n) / 2)
		}
	}
	return p, nil
}

// foregroundClasses returns the distinct values > 0 of label, ascending,
// and how many voxels hold each. Runs of 8 zero bytes are skipped whole.
func foregroundClasses(label *Volume) ([]float64, []int) {
	es := label.DType.Size()
	count := map[float64]int{}
	if label.DType == Uint8 {
		hist := histogramU8(label.Data)
		for v := 1; v < 256; v++ {
			if hist[v] > 0 {
				count[float64(v)] = hist[v]
			}
		}
	} else {
		// Labels come in runs; count a run before touching the map.
		cur, run := 0.0, 0
		eachNonzeroWord(label.Data, es, func(i int) bool {
			x := load(label.DType, label.Data[i*es:i*es+es])
			if !(x > 0) {
				return true
			}
			if x != cur {
				if run > 0 {
					count[cur] += run
				}
				cur, run = x, 0
			}
			run++
			return true
		})
		if run > 0 {
			count[cur] += run
		}
	}
	classes := make([]float64, 0, len(count))
	for v := range count {
		classes = append(classes, v)
	}
	slices.Sort(classes)
	counts := make([]int, len(classes))
	for i, v := range classes {
		counts[i] = count[v]
	}
	return classes, counts
}

// histogramU8 counts each byte value, skipping zero 32-byte blocks whole
// (the background of a label).
func histogramU8(b []byte) *[256]int {
	var hist [256]int
	i := 0
	for ; i+32 <= len(b); i += 32 {
		blk := b[i : i+32]
		if binary.LittleEndian.Uint64(blk)|binary.LittleEndian.Uint64(blk[8:])|
			binary.LittleEndian.Uint64(blk[16:])|binary.LittleEndian.Uint64(blk[24:]) == 0 {
			continue
		}
		for _, x := range blk {
			hist[x]++
		}
	}
	for _, x := range b[i:] {
		hist[x]++
	}
	return &hist
}

// nthOf returns the flat index of the j-th (from 0) element equal to
// class; the caller knows it exists.
func nthOf(label *Volume, class float64, j int) int {
	if label.DType == Uint8 {
		// Whole chunks are skipped by bytes.Count (vectorised).
		const chunk = 4096
		c := []byte{byte(class)}
		for off := 0; off < len(label.Data); off += chunk {
			part := label.Data[off:min(off+chunk, len(label.Data))]
			if n := bytes.Count(part, c); j >= n {
				j -= n
				continue
			}
			for i, x := range part {
				if x == c[0] {
					if j == 0 {
						return off + i
					}
					j--
				}
			}
		}
		return -1
	}
	es := label.DType.Size()
	found := -1
	eachNonzeroWord(label.Data, es, func(i int) bool {
		if load(label.DType, label.Data[i*es:i*es+es]) == class {
			if j == 0 {
				found = i
				return false
			}
			j--
		}
		return true
	})
	return found
}

// eachNonzeroWord calls f, in order, with the index of every element of b
// (elements of es bytes) that is not inside an all-zero aligned 8-byte
// word, so every element whose bytes are not all zero is visited. It stops
// when f returns false.
func eachNonzeroWord(b []byte, es int, f func(i int) bool) {
	per := 8 / es
	w := 0
	for ; w+8 <= len(b); w += 8 {
		// Skip 32 zero bytes at a time, then 8.
		if w+32 <= len(b) && binary.LittleEndian.Uint64(b[w:])|binary.LittleEndian.Uint64(b[w+8:])|
			binary.LittleEndian.Uint64(b[w+16:])|binary.LittleEndian.Uint64(b[w+24:]) == 0 {
			w += 24
			continue
		}
		if binary.LittleEndian.Uint64(b[w:]) == 0 {
			continue
		}
		for e := 0; e < per; e++ {
			if !f(w/es + e) {
				return
			}
		}
	}
	for i := w / es; i < len(b)/es; i++ {
		if !f(i) {
			return
		}
	}
}
