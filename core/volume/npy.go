package volume

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/minatoloader/minatoloader/core/internal/regfile"
)

// Defaults of ReadOptions.
const (
	// DefaultMaxBytes caps the data an .npy header may claim: 4 GiB, a
	// float32 CT volume of 512 x 512 x 4096 voxels.
	DefaultMaxBytes = 4 << 30
	// DefaultMaxHeaderBytes caps the header text. numpy writes about 128
	// bytes and refuses more than 10000 unless told otherwise.
	DefaultMaxHeaderBytes = 64 << 10
)

var npyMagic = []byte("\x93NUMPY")

// ReadOptions bounds and checks what a reader accepts. A nil *ReadOptions
// means the defaults: limits as above, any type, any shape.
type ReadOptions struct {
	// MaxBytes caps the data size (elements times element size) a header
	// may claim; a larger claim fails with ErrTooLarge before anything is
	// allocated. 0 means DefaultMaxBytes.
	MaxBytes int64
	// MaxHeaderBytes caps the header text; 0 means DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// DType, if set, is the type the array must have.
	DType DType
	// Rank, if > 0, is the number of dimensions the array must have.
	Rank int
	// Shape, if non-nil, is the shape the array must have; an entry of -1
	// matches any size on that axis. It implies Rank = len(Shape).
	Shape []int
}

func (o *ReadOptions) limits() (maxBytes int64, maxHeader int) {
	maxBytes, maxHeader = DefaultMaxBytes, DefaultMaxHeaderBytes
	if o != nil && o.MaxBytes > 0 {
		maxBytes = o.MaxBytes
	}
	if o != nil && o.MaxHeaderBytes > 0 {
		maxHeader = o.MaxHeaderBytes
	}
	return maxBytes, maxHeader
}

// NpyHeader is what an .npy file's preamble and header say.
type NpyHeader struct {
	Major, Minor int   // format version: 1.0, 2.0 or 3.0
	DType        DType // from 'descr'
	Shape        []int // from 'shape'; C order ('fortran_order': False)
	DataOffset   int64 // bytes before the data: magic, version, length, header
}

// DataBytes is the size of the data the header describes.
func (h NpyHeader) DataBytes() int64 {
	n, _ := numElements(h.Shape)
	return int64(n) * int64(h.DType.Size())
}

// ReadNpyHeader reads the preamble and header of one .npy array from r and
// checks them against o, leaving r at the first data byte.
func ReadNpyHeader(r io.Reader, o *ReadOptions) (NpyHeader, error) {
	h, err := readHeader(r, o)
	if err != nil {
		return NpyHeader{}, fmt.Errorf("volume: read npy header: %w", err)
	}
	return h, nil
}

// ReadNpy reads exactly one .npy array from r and leaves r just after it,
// so arrays written back to back (np.save on one open file) read in turn.
// The data buffer grows with what actually arrives (at most twice that),
// so a short stream under a header claiming a huge shape fails without
// allocating the claim.
func ReadNpy(r io.Reader, o *ReadOptions) (*Volume, error) {
	v, err := readNpy(r, o, -1)
	if err != nil {
		return nil, fmt.Errorf("volume: read npy: %w", err)
	}
	return v, nil
}

// DecodeNpy decodes an .npy file held in memory. The data must end exactly
// where the header says it does. The Volume's Data is a copy.
func DecodeNpy(b []byte, o *ReadOptions) (*Volume, error) {
	v, err := readNpy(bytes.NewReader(b), o, int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("volume: decode npy: %w", err)
	}
	return v, nil
}

// ReadNpyFile reads the .npy file at path. Its size must be exactly header
// plus data; it is checked before the data is allocated, which is then read
// in one call. Errors name the file. Cost: that of os.ReadFile (1.7 ms for
// an 8 MiB file in the page cache, BenchmarkReadNpyFile*).
func ReadNpyFile(path string, o *ReadOptions) (*Volume, error) {
	v, err := readNpyFile(path, o)
	if err != nil {
		return nil, fmt.Errorf("volume: read %q: %w", path, err)
	}
	return v, nil
}

func readNpyFile(path string, o *ReadOptions) (*Volume, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	v, err := readNpy(f, o, size)
	if err != nil {
		return nil, err
	}
	var probe [1]byte
	if n, _ := f.Read(probe[:]); n > 0 {
		return nil, fmt.Errorf("%w: the file grew while read (%d bytes when opened)", ErrFormat, size)
	}
	return v, nil
}

// openRegular is regfile.Open, a file that is not regular being ErrFormat.
func openRegular(path string) (*os.File, int64, error) {
	f, size, err := regfile.Open(path)
	var nr *regfile.NotRegularError
	if errors.As(err, &nr) {
		return nil, 0, fmt.Errorf("%w: %v", ErrFormat, nr)
	}
	return f, size, err
}

// readNpy reads one array; size >= 0 is the total input size, which must
// then match header plus data exactly.
func readNpy(r io.Reader, o *ReadOptions, size int64) (*Volume, error) {
	h, err := readHeader(r, o)
	if err != nil {
		return nil, err
	}
	need := h.DataBytes()
	if size >= 0 {
		if have := size - h.DataOffset; have != need {
			return nil, dataSizeError(h, have)
		}
	}
	var data []byte
	if size >= 0 {
		data = make([]byte, need)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("%w: reading %d data bytes: %w", ErrFormat, need, err)
		}
	} else if data, err = readGrowing(r, int(need)); err != nil {
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: reading %d data bytes: %w", ErrFormat, need, err)
		}
		return nil, dataSizeError(h, int64(len(data)))
	}
	return &Volume{Shape: h.Shape, DType: h.DType, Data: data}, nil
}

func dataSizeError(h NpyHeader, have int64) error {
	what := "truncated"
	if have > h.DataBytes() {
		what = "trailing bytes"
	}
	return fmt.Errorf("%w: %s: shape %s %s needs %d data bytes after the %d-byte header, found %d",
		ErrFormat, what, shapeString(h.Shape), h.DType.Descr(), h.DataBytes(), h.DataOffset, have)
}

// readGrowing reads exactly n bytes, growing its buffer as data arrives.
// On a short read it returns what arrived and an error.
func readGrowing(r io.Reader, n int) ([]byte, error) {
	const first = 1 << 20
	buf := make([]byte, 0, min(n, first))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n-len(buf), cap(buf)))
		}
		m, err := io.ReadFull(r, buf[len(buf):min(n, cap(buf))])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// readHeader reads magic, version, header length and header text.
func readHeader(r io.Reader, o *ReadOptions) (NpyHeader, error) {
	maxBytes, maxHeader := o.limits()
	var pre [12]byte
	if n, err := io.ReadFull(r, pre[:8]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return NpyHeader{}, fmt.Errorf("%w: empty input (no magic)", ErrFormat)
		}
		return NpyHeader{}, short(err, fmt.Sprintf("%d bytes, the magic and version need 8", n))
	}
	if !bytes.Equal(pre[:6], npyMagic) {
		return NpyHeader{}, fmt.Errorf("%w: bad magic %q, want \"\\x93NUMPY\"", ErrFormat, pre[:6])
	}
	h := NpyHeader{Major: int(pre[6]), Minor: int(pre[7])}
	var lenBytes int
	switch {
	case h.Major == 1 && h.Minor == 0:
		lenBytes = 2
	case (h.Major == 2 || h.Major == 3) && h.Minor == 0:
		lenBytes = 4
	default:
		return NpyHeader{}, fmt.Errorf("%w: format version %d.%d (this reader knows 1.0, 2.0, 3.0)", ErrUnsupported, h.Major, h.Minor)
	}
	if n, err := io.ReadFull(r, pre[8:8+lenBytes]); err != nil {
		return NpyHeader{}, short(err, fmt.Sprintf("%d bytes, version %d.0 needs %d", 8+n, h.Major, 8+lenBytes))
	}
	var hlen uint64
	if lenBytes == 2 {
		hlen = uint64(binary.LittleEndian.Uint16(pre[8:]))
	} else {
		hlen = uint64(binary.LittleEndian.Uint32(pre[8:]))
	}
	if hlen > uint64(maxHeader) {
		return NpyHeader{}, fmt.Errorf("%w: header length %d exceeds the limit of %d bytes", ErrTooLarge, hlen, maxHeader)
	}
	text := make([]byte, hlen)
	if n, err := io.ReadFull(r, text); err != nil {
		return NpyHeader{}, short(err, fmt.Sprintf("header claims %d bytes, input ends after %d of them", hlen, n))
	}
	h.DataOffset = int64(8+lenBytes) + int64(hlen)
	d, err := parseHeader(text)
	if err != nil {
		return NpyHeader{}, err
	}
	if d.fortran {
		return NpyHeader{}, fmt.Errorf("%w: 'fortran_order': True (this reader takes C order; save np.ascontiguousarray(a))", ErrUnsupported)
	}
	h.Shape = d.shape
	if h.DType, err = parseDescr(d.descr); err != nil {
		return NpyHeader{}, err
	}
	n, err := numElements(h.Shape)
	if err != nil {
		return NpyHeader{}, fmt.Errorf("%w: shape %s has more than %d elements", ErrTooLarge, shapeString(h.Shape), maxElements)
	}
	if need := int64(n) * int64(h.DType.Size()); need > maxBytes {
		return NpyHeader{}, fmt.Errorf("%w: shape %s %s is %d bytes, over the limit of %d", ErrTooLarge, shapeString(h.Shape), d.descr, need, maxBytes)
	}
	if err := o.check(h); err != nil {
		return NpyHeader{}, err
	}
	return h, nil
}

// short describes a failed io.ReadFull: the input ended (truncated), or
// the reader failed, which the error then wraps.
func short(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated: %s", ErrFormat, what)
	}
	return fmt.Errorf("%w: read failed (%s): %w", ErrFormat, what, err)
}

func (o *ReadOptions) check(h NpyHeader) error {
	if o == nil {
		return nil
	}
	if o.DType != 0 && h.DType != o.DType {
		return fmt.Errorf("%w: dtype is %s, want %s", ErrDType, h.DType, o.DType)
	}
	if o.Rank > 0 && o.Shape == nil && len(h.Shape) != o.Rank {
		return fmt.Errorf("%w: rank %d (shape %s), want rank %d", ErrShape, len(h.Shape), shapeString(h.Shape), o.Rank)
	}
	if o.Shape != nil {
		ok := len(h.Shape) == len(o.Shape)
		for i := 0; ok && i < len(o.Shape); i++ {
			ok = o.Shape[i] == -1 || o.Shape[i] == h.Shape[i]
		}
		if !ok {
			return fmt.Errorf("%w: shape %s, want %s (-1: any)", ErrShape, shapeString(h.Shape), shapeString(o.Shape))
		}
	}
	return nil
}

// parseDescr maps a numpy type string to a DType.
func parseDescr(s string) (DType, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("%w: 'descr' %s is not a type string", ErrFormat, pyQuote(s))
	}
	order, code := s[0], s[1:]
	if order != '<' && order != '>' && order != '|' && order != '=' {
		order, code = 0, s
	}
	var t DType
	for c := Uint8; c <= Float64; c++ {
		if dtypeInfo[c].descr[1:] == code {
			t = c
		}
	}
	if t == 0 {
		return 0, fmt.Errorf("%w: dtype %s (supported: |u1 |i1 <i2 <i4 <f2 <f4 <f8)", ErrUnsupported, pyQuote(s))
	}
	if t.Size() == 1 {
		return t, nil // byte order is meaningless for one byte
	}
	switch order {
	case '<':
		return t, nil
	case '>':
		return 0, fmt.Errorf("%w: big-endian dtype %s (little-endian only; save a.astype(a.dtype.newbyteorder('<')))", ErrUnsupported, pyQuote(s))
	default:
		return 0, fmt.Errorf("%w: dtype %s has no explicit byte order (numpy writes '<' or '>')", ErrUnsupported, pyQuote(s))
	}
}

// headerDict is the content of the header's Python dict literal.
type headerDict struct {
	descr   string
	fortran bool
	shape   []int
}

// parseHeader parses the Python dict literal numpy writes:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Whitespace anywhere between tokens and a trailing comma in the dict and
// in the shape tuple are accepted, as Python accepts them. The keys must
// be exactly descr, fortran_order and shape, as numpy requires.
func parseHeader(text []byte) (headerDict, error) {
	p := &hparser{s: text}
	var d headerDict
	seen := map[string]bool{}
	if !p.eat('{') {
		return d, p.fail("header must start with '{'")
	}
	for {
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return d, err
		}
		if seen[key] {
			return d, p.fail("key '" + key + "' repeated")
		}
		seen[key] = true
		if !p.eat(':') {
			return d, p.fail("expected ':' after key '" + key + "'")
		}
		switch key {
		case "descr":
			if p.peek() == '[' {
				return d, fmt.Errorf("%w: structured dtype (a list in 'descr')", ErrUnsupported)
			}
			if d.descr, err = p.str(); err != nil {
				return d, err
			}
		case "fortran_order":
			if d.fortran, err = p.boolean(); err != nil {
				return d, err
			}
		case "shape":
			if d.shape, err = p.tuple(); err != nil {
				return d, err
			}
		default:
			return d, p.fail(fmt.Sprintf("unexpected key %q (want descr, fortran_order, shape)", key))
		}
		if p.eat(',') {
			continue
		}
		if !p.eat('}') {
			return d, p.fail("expected ',' or '}'")
		}
		break
	}
	p.skip()
	if p.i != len(p.s) {
		return d, p.fail("text after the closing '}'")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return d, fmt.Errorf("%w: header has no '%s' key", ErrFormat, k)
		}
	}
	return d, nil
}

type hparser struct {
	s []byte
	i int
}

func (p *hparser) fail(why string) error {
	return fmt.Errorf("%w: header: %s at offset %d of %q", ErrFormat, why, p.i, clip(p.s, 80))
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

func (p *hparser) skip() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			p.i++
		default:
			return
		}
	}
}

func (p *hparser) peek() byte {
	p.skip()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *hparser) eat(c byte) bool {
	if p.peek() == c && p.i < len(p.s) {
		p.i++
		return true
	}
	return false
}

// str parses a quoted Python string; a backslash takes the next byte.
func (p *hparser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.fail("expected a quoted string")
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == q:
			return b.String(), nil
		case c == '\\' && p.i < len(p.s):
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '\n':
			return "", p.fail("newline inside a string")
		default:
			b.WriteByte(c)
		}
	}
	return "", p.fail("unterminated string")
}

func (p *hparser) boolean() (bool, error) {
	p.skip()
	rest := p.s[p.i:]
	switch {
	case bytes.HasPrefix(rest, []byte("True")):
		p.i += 4
		return true, nil
	case bytes.HasPrefix(rest, []byte("False")):
		p.i += 5
		return false, nil
	}
	return false, p.fail("'fortran_order' must be True or False")
}

// tuple parses (), (n,), (n, m) and (n, m,) of non-negative integers
// (Python 2's 3L spelling too). (n) is an int in Python, not a tuple, and
// numpy rejects it; so does this parser.
func (p *hparser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, p.fail("'shape' must be a tuple")
	}
	shape := []int{}
	comma := false
	for {
		if p.eat(')') {
			break
		}
		n, err := p.integer()
		if err != nil {
			return nil, err
		}
		shape = append(shape, n)
		if comma = p.eat(','); !comma {
			if !p.eat(')') {
				return nil, p.fail("expected ',' or ')' in 'shape'")
			}
			break
		}
	}
	if len(shape) == 1 && !comma {
		return nil, p.fail("'shape' (n) is an int, not a tuple; numpy writes (n,)")
	}
	return shape, nil
}

func (p *hparser) integer() (int, error) {
	p.skip()
	start := p.i
	if p.i < len(p.s) && (p.s[p.i] == '-' || p.s[p.i] == '+') {
		p.i++
	}
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	digits := string(p.s[start:p.i])
	if p.i < len(p.s) && (p.s[p.i] == 'L' || p.s[p.i] == 'l') {
		p.i++
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	switch {
	case digits == "" || digits == "-" || digits == "+":
		return 0, p.fail("expected an integer in 'shape'")
	case err != nil || n > maxElements:
		return 0, fmt.Errorf("%w: dimension %s in 'shape' is too large", ErrTooLarge, digits)
	case n < 0:
		return 0, fmt.Errorf("%w: negative dimension %d in 'shape'", ErrFormat, n)
	}
	return int(n), nil
}

// pyQuote spells s as Python would, in single quotes, when that needs no
// escapes; otherwise as Go's %q does.
func pyQuote(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] == s && !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return strconv.Quote(s)
}

func shapeString(s []int) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, d := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	if len(s) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}

// EncodeNpy returns v as an .npy file: version 1.0 (2.0 only when the
// header would not fit 65535 bytes), C order, little-endian, the header
// padded with spaces and a newline to a multiple of 64 bytes as numpy
// pads it. np.load reads the result; DecodeNpy reads it back exactly.
func EncodeNpy(v *Volume) ([]byte, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", v.DType.Descr(), shapeString(v.Shape))
	major, pre := 1, 10
	if len(dict)+1+pre > 1<<16-1 {
		major, pre = 2, 12
	}
	total := (pre + len(dict) + 1 + 63) / 64 * 64
	hlen := total - pre
	out := make([]byte, 0, total+len(v.Data))
	out = append(out, npyMagic...)
	out = append(out, byte(major), 0)
	if major == 1 {
		out = binary.LittleEndian.AppendUint16(out, uint16(hlen))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(hlen))
	}
	out = append(out, dict...)
	for len(out) < total-1 {
		out = append(out, ' ')
	}
	out = append(out, '\n')
	return append(out, v.Data...), nil
}

// WriteNpy writes v to w as EncodeNpy encodes it.
func WriteNpy(w io.Writer, v *Volume) error {
	b, err := EncodeNpy(v)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("volume: write npy: %w", err)
	}
	return nil
}

// WriteNpyFile writes v to path (mode 0644) as EncodeNpy encodes it.
func WriteNpyFile(path string, v *Volume) error {
	b, err := EncodeNpy(v)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("volume: write %s: %w", path, err)
	}
	return nil
}
