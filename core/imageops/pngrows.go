package imageops

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// errPNGFallback means decodePNGRows does not take this file (or found it
// malformed); the caller decodes it with image/png instead, which says
// what is wrong with a bad file.
var errPNGFallback = errors.New("png: not a streaming case")

// decodePNGRows decodes the common PNGs straight into dst, a row at a
// time: non-interlaced, 8 or 16 bits, gray, gray+alpha, RGB or RGBA, no
// PLTE or tRNS chunk. It holds two filtered rows besides dst, where
// image/png builds the whole image at its own depth first (a 16-bit RGBA
// image at 8 bytes a pixel: 648 MB for 9000 x 9000, then converted to 243
// MB of RGB). The pixels are FromImage's of image/png's image: alpha
// dropped, gray replicated (or kept for Gray), the high byte of a 16-bit
// sample.
//
// It accepts a subset of what image/png accepts (chunk CRCs, order, the
// zlib checksum and the exact data length are checked); anything else,
// including every malformed file, returns errPNGFallback (dst may then
// hold part of the image), so errors keep image/png's wording. FuzzDecodePNG checks
// that a file it decodes gives image/png's pixels.
func decodePNGRows(dst *Image, data []byte, mode Mode) error {
	if !bytes.HasPrefix(data, pngMagic) {
		return errPNGFallback
	}
	c := chunks{rest: data[len(pngMagic):]}
	typ, body, ok := c.next()
	if !ok || typ != "IHDR" || len(body) != 13 {
		return errPNGFallback
	}
	be := binary.BigEndian
	w, h := be.Uint32(body[0:]), be.Uint32(body[4:])
	depth, ct := body[8], body[9]
	if w == 0 || h == 0 || w > 1<<24 || h > 1<<24 || body[10] != 0 || body[11] != 0 || body[12] != 0 {
		return errPNGFallback // compression, filter method 0; no interlace
	}
	if depth != 8 && depth != 16 {
		return errPNGFallback
	}
	var samples int // per pixel
	switch ct {
	case 0:
		samples = 1
	case 2:
		samples = 3
	case 4:
		samples = 2
	case 6:
		samples = 4
	default:
		return errPNGFallback // palette
	}
	bps := int(depth) / 8 // bytes per sample
	bpp := samples * bps  // bytes per pixel, the filters' distance
	W, H := int(w), int(h)
	rowLen := W * bpp
	// The IDAT chunks, which must be consecutive, as one stream; before
	// them only ancillary chunks (first letter lower case) other than tRNS.
	var idat [][]byte
	for {
		typ, body, ok = c.next()
		if !ok {
			return errPNGFallback
		}
		if typ == "IDAT" {
			break
		}
		if typ[0]&0x20 == 0 || typ == "tRNS" {
			return errPNGFallback // a critical chunk (PLTE, IEND, unknown) or transparency
		}
	}
	for typ == "IDAT" {
		idat = append(idat, body)
		if typ, body, ok = c.next(); !ok {
			return errPNGFallback
		}
	}
	// After them: ancillary chunks, then IEND, then nothing.
	for typ != "IEND" {
		if typ[0]&0x20 == 0 || typ == "tRNS" {
			return errPNGFallback
		}
		if typ, body, ok = c.next(); !ok {
			return errPNGFallback
		}
	}
	if len(body) != 0 || len(c.rest) != 0 {
		return errPNGFallback
	}
	readers := make([]io.Reader, len(idat))
	for i, b := range idat {
		readers[i] = bytes.NewReader(b)
	}
	zr, err := zlib.NewReader(io.MultiReader(readers...))
	if err != nil {
		return errPNGFallback
	}
	defer zr.Close()

	// Rows, with bpp zero bytes before each so the filters need no edge
	// case: prev (the row above, zero for the first) and cur.
	buf := make([]byte, 2*(bpp+rowLen)+1)
	prev, cur := buf[:bpp+rowLen], buf[bpp+rowLen:2*(bpp+rowLen)]
	filter := buf[len(buf)-1:]
	dst.Reset(W, H, mode.Channels())
	for y := range H {
		if _, err := io.ReadFull(zr, filter); err != nil {
			return errPNGFallback
		}
		row := cur[bpp:]
		if _, err := io.ReadFull(zr, row); err != nil {
			return errPNGFallback
		}
		if !unfilter(filter[0], cur, prev, bpp) {
			return errPNGFallback
		}
		pngRow(dst.Row(y), row, samples, bps, mode)
		prev, cur = cur, prev
	}
	// The stream must end here, its checksum right (read at EOF).
	var one [1]byte
	if n, err := io.ReadFull(zr, one[:]); n != 0 || err != io.EOF {
		return errPNGFallback
	}
	return nil
}

// chunks walks PNG chunks, checking each one's CRC.
type chunks struct{ rest []byte }

func (c *chunks) next() (typ string, body []byte, ok bool) {
	if len(c.rest) < 12 {
		return "", nil, false
	}
	n := binary.BigEndian.Uint32(c.rest)
	if n > 0x7fffffff || int64(n) > int64(len(c.rest)-12) {
		return "", nil, false
	}
	typed := c.rest[4 : 8+n]
	if crc32.ChecksumIEEE(typed) != binary.BigEndian.Uint32(c.rest[8+n:]) {
		return "", nil, false
	}
	for _, ch := range typed[:4] {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			return "", nil, false
		}
	}
	c.rest = c.rest[12+n:]
	return string(typed[:4]), typed[4:], true
}

// unfilter undoes filter f on cur (after its bpp leading zeros) with prev,
// the row above (likewise padded). It reports false for an unknown filter.
func unfilter(f byte, cur, prev []byte, bpp int) bool {
	switch f {
	case 0:
	case 1: // Sub
		for i := bpp; i < len(cur); i++ {
			cur[i] += cur[i-bpp]
		}
	case 2: // Up
		for i := bpp; i < len(cur); i++ {
			cur[i] += prev[i]
		}
	case 3: // Average
		for i := bpp; i < len(cur); i++ {
			cur[i] += uint8((int(cur[i-bpp]) + int(prev[i])) / 2)
		}
	case 4: // Paeth
		for i := bpp; i < len(cur); i++ {
			a, b, c := int(cur[i-bpp]), int(prev[i]), int(prev[i-bpp])
			p := a + b - c
			pa, pb, pc := absInt(p-a), absInt(p-b), absInt(p-c)
			switch {
			case pa <= pb && pa <= pc:
				cur[i] += uint8(a)
			case pb <= pc:
				cur[i] += uint8(b)
			default:
				cur[i] += uint8(c)
			}
		}
	default:
		return false
	}
	return true
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// pngRow converts one unfiltered row of samples (bps bytes each,
// big-endian: the first byte is the high one) to out, as FromImage does
// image/png's image: gray replicated (kept for Gray), alpha dropped, RGB
// reduced to L for Gray.
func pngRow(out, in []byte, samples, bps int, mode Mode) {
	step := samples * bps
	n := len(in) / step
	switch {
	case samples <= 2 && mode == Gray: // gray, gray+alpha
		for x := range n {
			out[x] = in[x*step]
		}
	case samples <= 2:
		for x := range n {
			v := in[x*step]
			o := out[3*x : 3*x+3 : 3*x+3]
			o[0], o[1], o[2] = v, v, v
		}
	case mode == Gray: // RGB, RGBA
		for x := range n {
			p := in[x*step : x*step+step : x*step+step]
			out[x] = uint8((uint32(p[0])*19595 + uint32(p[bps])*38470 + uint32(p[2*bps])*7471 + 0x8000) >> 16)
		}
	default:
		for x := range n {
			p := in[x*step : x*step+step : x*step+step]
			o := out[3*x : 3*x+3 : 3*x+3]
			o[0], o[1], o[2] = p[0], p[bps], p[2*bps]
		}
	}
}
