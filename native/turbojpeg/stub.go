//go:build !turbojpeg || !cgo

package turbojpeg

// The default build: no C library, every decode returns ErrUnavailable.
const available = false

func decode(dst []uint8, data []byte, o *Options) (int, int, []uint8, error) {
	return 0, 0, nil, ErrUnavailable
}

func decodeConfig(data []byte) (Config, error) {
	return Config{}, ErrUnavailable
}
