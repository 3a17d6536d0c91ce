package remote

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Message kinds and statuses of docs/worker-protocol.md.
const (
	kindGet   = 1
	kindHello = 2
	kindReply = 3

	statusOK        = 0
	statusError     = 1
	statusExhausted = 2

	getSize     = 40 // GET payload
	getFrame    = 4 + getSize
	helloHeader = 16 // HELLO fixed part
	replyHeader = 32 // REPLY fixed part
	blockHeader = 64 // an arena block's header

	// maxMessage bounds what one worker message may claim to be: HELLO and
	// REPLY carry at most a traceback, so anything larger is corruption.
	maxMessage = 64 << 20
)

var errFrame = errors.New("bad frame length")

// readFrame reads one multiprocessing.connection frame: a 4-byte big-endian
// signed length (-1: an 8-byte big-endian length follows), then the payload.
// The payload is read into buf when it fits, otherwise into a new slice. A
// clean EOF before the first header byte is io.EOF; EOF inside a frame is
// io.ErrUnexpectedEOF.
func readFrame(r *bufio.Reader, buf []byte) ([]byte, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return nil, err
	}
	n := int64(int32(binary.BigEndian.Uint32(hdr[:4])))
	if n == -1 {
		if _, err := io.ReadFull(r, hdr[:8]); err != nil {
			return nil, noEOF(err)
		}
		u := binary.BigEndian.Uint64(hdr[:8])
		if u > maxMessage {
			return nil, fmt.Errorf("%w: %d bytes", errFrame, u)
		}
		n = int64(u)
	}
	if n < 0 || n > maxMessage {
		return nil, fmt.Errorf("%w: %d", errFrame, n)
	}
	if int64(cap(buf)) >= n {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, noEOF(err)
	}
	return buf, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// putGet encodes a GET frame (header and payload) into b.
func putGet(b *[getFrame]byte, seq uint64, epoch, index int64, seed uint64) {
	binary.BigEndian.PutUint32(b[0:], getSize)
	p := b[4:]
	binary.LittleEndian.PutUint32(p[0:], kindGet)
	binary.LittleEndian.PutUint32(p[4:], 0)
	binary.LittleEndian.PutUint64(p[8:], seq)
	binary.LittleEndian.PutUint64(p[16:], uint64(epoch))
	binary.LittleEndian.PutUint64(p[24:], uint64(index))
	binary.LittleEndian.PutUint64(p[32:], seed)
}

// message is a parsed worker -> main message (HELLO or REPLY).
type message struct {
	kind   uint32
	status uint32
	pid    uint64 // HELLO
	seq    uint64 // REPLY
	offset uint64 // REPLY, status 0
	length uint64 // REPLY, status 0
	text   string // the error text (HELLO or REPLY, status 1)
}

// parseMessage decodes a HELLO or a REPLY. It checks the layout, the kind
// and the status, not whether the message is expected now.
func parseMessage(b []byte) (message, error) {
	var m message
	if len(b) < 8 {
		return m, fmt.Errorf("message of %d bytes", len(b))
	}
	m.kind = binary.LittleEndian.Uint32(b[0:])
	m.status = binary.LittleEndian.Uint32(b[4:])
	switch m.kind {
	case kindHello:
		if len(b) < helloHeader {
			return m, fmt.Errorf("HELLO of %d bytes", len(b))
		}
		m.pid = binary.LittleEndian.Uint64(b[8:])
		switch m.status {
		case statusOK:
		case statusError:
			m.text = string(b[helloHeader:])
		default:
			return m, fmt.Errorf("HELLO status %d", m.status)
		}
	case kindReply:
		if len(b) < replyHeader {
			return m, fmt.Errorf("REPLY of %d bytes", len(b))
		}
		m.seq = binary.LittleEndian.Uint64(b[8:])
		switch m.status {
		case statusOK:
			m.offset = binary.LittleEndian.Uint64(b[16:])
			m.length = binary.LittleEndian.Uint64(b[24:])
		case statusError:
			m.text = string(b[replyHeader:])
		case statusExhausted:
			return m, errors.New("REPLY status 2 (exhausted) to a GET")
		default:
			return m, fmt.Errorf("REPLY status %d", m.status)
		}
	default:
		return m, fmt.Errorf("unknown message kind %d", m.kind)
	}
	return m, nil
}

// splitError splits a worker's error text, "module:qualname\n<traceback>",
// at the first newline.
func splitError(text string) (typ, traceback string) {
	typ, traceback, _ = strings.Cut(text, "\n")
	return typ, traceback
}
