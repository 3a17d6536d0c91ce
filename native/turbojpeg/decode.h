/* decode.h -- the C half of package turbojpeg: one libjpeg-turbo decode
 * per call, no global state, safe to call from any number of threads.
 * Internal to the Go package; not part of minatoloader's C ABI. */
#ifndef MLTJ_DECODE_H
#define MLTJ_DECODE_H

#include <stddef.h>

/* Return codes of mltj_decode. */
enum {
	MLTJ_OK = 0,
	MLTJ_ERR_JPEG = 1,        /* libjpeg-turbo raised an error (corrupt or unsupported data) */
	MLTJ_ERR_WARNING = 2,     /* a libjpeg-turbo warning, fatal without MLTJ_LENIENT */
	MLTJ_ERR_TOO_LARGE = 3,   /* width*height above max_pixels; nothing was decoded */
	MLTJ_ERR_UNSUPPORTED = 4, /* a component count or color space with no RGB conversion */
	MLTJ_NEED_BUFFER = 5      /* header read; dst is NULL or smaller than out_w*out_h*3 */
};

/* Flags of mltj_decode. */
#define MLTJ_LENIENT 1       /* decode through warnings */
#define MLTJ_FAST_UPSAMPLE 2 /* repeat chroma samples instead of smoothing them */

/* The longest message, including the NUL (libjpeg's JMSG_LENGTH_MAX). */
#define MLTJ_MSG_LEN 200

/* Progressive images with more scans than this are refused (what
 * TurboJPEG's TJFLAG_LIMITSCANS does): each scan re-walks the coefficient
 * buffer, so a small file with thousands of scans costs minutes. */
#define MLTJ_MAX_SCANS 500

typedef struct {
	int width, height;         /* source size, from the frame header */
	int components;            /* 1, 3 or 4 */
	int out_width, out_height; /* size of the RGB output */
	char msg[MLTJ_MSG_LEN];    /* the reason when the result is not MLTJ_OK */
} mltj_info;

/* mltj_decode reads the header of the JPEG in data[0:size], refuses it when
 * width*height > max_pixels (max_pixels <= 0: no limit), picks the smallest
 * DCT scaling factor M/8 (M = 1..8) whose output is at least
 * min_w x min_h (0 leaves that side unconstrained; M = 8 when the source is
 * no larger than the minimum), and decodes to 8-bit RGB, rows of out_width*3
 * bytes, into dst. When dst is NULL or dst_cap is too small it returns
 * MLTJ_NEED_BUFFER with info filled and decodes nothing.
 *
 * Grayscale and RGB files convert in libjpeg-turbo; CMYK and YCCK files are
 * decoded to CMYK and converted here (Adobe files store inverted CMYK).
 * Without MLTJ_LENIENT in flags the first warning (a truncated file, bytes
 * before a marker, ...) is MLTJ_ERR_WARNING; with it the decode goes on,
 * filling what is missing as libjpeg-turbo does.
 * MLTJ_FAST_UPSAMPLE turns off libjpeg-turbo's chroma smoothing
 * (do_fancy_upsampling), which is what image/jpeg does.
 *
 * Returns: an MLTJ_* code; info->msg names the reason on failure.
 * OWNERSHIP: data and dst are borrowed for the call; nothing is retained. */
int mltj_decode(const unsigned char *data, unsigned long size, int min_w, int min_h,
		long long max_pixels, int flags, unsigned char *dst, size_t dst_cap,
		mltj_info *info);

#endif
