//go:build turbojpeg && cgo

/* decode.c -- libjpeg-turbo decoding for package turbojpeg (see decode.h).
 *
 * This file never calls jpeg_std_error(): that pulls jerror.c.o out of
 * Debian's libjpeg.a, whose reference to libc's `stderr` (an R_X86_64_PC32
 * relocation, the archive is built as PIE, not PIC) cannot go into a shared
 * object. The error manager below is complete without it, and its message
 * table is built from <jerror.h> exactly as jerror.c builds its own. */

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "decode.h"

#if !defined(LIBJPEG_TURBO_VERSION)
#error "package turbojpeg needs libjpeg-turbo's jpeglib.h and libjpeg.a (Debian: libjpeg62-turbo-dev)"
#endif

/* jerror.h expands to the message strings when JMESSAGE is defined. Two of
 * them come from jversion.h, which is not installed: only trace output
 * uses them. */
#define MLTJ_STR_(x) #x
#define MLTJ_STR(x) MLTJ_STR_(x)
#ifndef JVERSION
#define JVERSION "libjpeg-turbo " MLTJ_STR(LIBJPEG_TURBO_VERSION)
#endif
#ifndef JCOPYRIGHT_SHORT
#define JCOPYRIGHT_SHORT "libjpeg-turbo: IJG, BSD-3-Clause and zlib licenses"
#endif
#define JMESSAGE(code, string) string,
static const char *const msg_table[] = {
#include <jerror.h>
	NULL
};
#undef JMESSAGE

typedef struct {
	struct jpeg_error_mgr pub; /* first: libjpeg casts cinfo->err to this */
	jmp_buf jb;
	int lenient;
	int code;
	mltj_info *info;
} err_mgr;

/* format_message is jerror.c's: the message for msg_code with its
 * parameters, at most JMSG_LENGTH_MAX bytes with the NUL. */
static void format_message(j_common_ptr c, char *buf)
{
	struct jpeg_error_mgr *err = c->err;
	int code = err->msg_code;
	const char *text = NULL;
	const char *p;
	int is_string = 0;

	if (code > 0 && code <= err->last_jpeg_message)
		text = err->jpeg_message_table[code];
	if (text == NULL) {
		err->msg_parm.i[0] = code;
		text = err->jpeg_message_table[0]; /* "Bogus message code %d" */
	}
	for (p = text; *p != '\0'; p++) {
		if (*p == '%') {
			is_string = p[1] == 's';
			break;
		}
	}
	if (is_string)
		snprintf(buf, JMSG_LENGTH_MAX, text, err->msg_parm.s);
	else
		snprintf(buf, JMSG_LENGTH_MAX, text, err->msg_parm.i[0], err->msg_parm.i[1],
			 err->msg_parm.i[2], err->msg_parm.i[3], err->msg_parm.i[4],
			 err->msg_parm.i[5], err->msg_parm.i[6], err->msg_parm.i[7]);
}

static void fail(j_common_ptr c, int code)
{
	err_mgr *e = (err_mgr *)c->err;
	e->code = code;
	longjmp(e->jb, 1);
}

static void on_error_exit(j_common_ptr c)
{
	format_message(c, ((err_mgr *)c->err)->info->msg);
	fail(c, MLTJ_ERR_JPEG);
}

/* Level -1 is a warning (corrupt or truncated data); levels >= 0 are trace
 * messages, ignored. */
static void on_emit_message(j_common_ptr c, int level)
{
	err_mgr *e = (err_mgr *)c->err;
	if (level >= 0)
		return;
	c->err->num_warnings++;
	if (!e->lenient) {
		format_message(c, e->info->msg);
		fail(c, MLTJ_ERR_WARNING);
	}
}

static void on_output_message(j_common_ptr c)
{
	(void)c;
}

static void on_reset_error_mgr(j_common_ptr c)
{
	c->err->num_warnings = 0;
	c->err->msg_code = 0;
}

static void on_progress(j_common_ptr c)
{
	if (c->is_decompressor && ((j_decompress_ptr)c)->input_scan_number > MLTJ_MAX_SCANS) {
		snprintf(((err_mgr *)c->err)->info->msg, MLTJ_MSG_LEN,
			 "JPEG has more than %d scans", MLTJ_MAX_SCANS);
		fail(c, MLTJ_ERR_JPEG);
	}
}

/* x*y/255 rounded, for x, y in 0..255. */
static inline unsigned char mul255(unsigned x, unsigned y)
{
	unsigned t = x * y + 128;
	return (unsigned char)((t + (t >> 8)) >> 8);
}

/* cmyk_to_rgb converts one row. inverted: Adobe's convention, 255 = no ink
 * (libjpeg-turbo's YCCK->CMYK conversion produces the same convention). */
static void cmyk_to_rgb(const unsigned char *src, unsigned char *dst, unsigned n, int inverted)
{
	unsigned i;
	for (i = 0; i < n; i++, src += 4, dst += 3) {
		unsigned c = src[0], m = src[1], y = src[2], k = src[3];
		if (!inverted) {
			c = 255 - c;
			m = 255 - m;
			y = 255 - y;
			k = 255 - k;
		}
		dst[0] = mul255(c, k);
		dst[1] = mul255(m, k);
		dst[2] = mul255(y, k);
	}
}

#define ROWS_PER_READ 16

int mltj_decode(const unsigned char *data, unsigned long size, int min_w, int min_h,
		long long max_pixels, int flags, unsigned char *dst, size_t dst_cap,
		mltj_info *info)
{
	struct jpeg_decompress_struct cinfo;
	struct jpeg_progress_mgr progress;
	err_mgr jerr;
	JSAMPROW rows[ROWS_PER_READ];
	size_t stride, need;
	int m;

	memset(info, 0, sizeof(*info));
	memset(&cinfo, 0, sizeof(cinfo)); /* jpeg_destroy is safe if create fails */
	memset(&jerr, 0, sizeof(jerr));
	memset(&progress, 0, sizeof(progress));
	jerr.pub.error_exit = on_error_exit;
	jerr.pub.emit_message = on_emit_message;
	jerr.pub.output_message = on_output_message;
	jerr.pub.format_message = format_message;
	jerr.pub.reset_error_mgr = on_reset_error_mgr;
	jerr.pub.jpeg_message_table = msg_table;
	jerr.pub.last_jpeg_message = (int)JMSG_LASTMSGCODE - 1;
	jerr.lenient = (flags & MLTJ_LENIENT) != 0;
	jerr.info = info;
	cinfo.err = &jerr.pub;
	progress.progress_monitor = on_progress;

	/* Every libjpeg-turbo error and every fatal warning lands here. Only
	 * cinfo and jerr (not modified as locals after this point) are used. */
	if (setjmp(jerr.jb)) {
		jpeg_destroy_decompress(&cinfo);
		return jerr.code;
	}

	jpeg_create_decompress(&cinfo);
	cinfo.progress = &progress;
	jpeg_mem_src(&cinfo, data, size);
	jpeg_read_header(&cinfo, TRUE);

	info->width = (int)cinfo.image_width;
	info->height = (int)cinfo.image_height;
	info->components = cinfo.num_components;

	if (max_pixels > 0 &&
	    (long long)cinfo.image_width * (long long)cinfo.image_height > max_pixels) {
		snprintf(info->msg, MLTJ_MSG_LEN, "%ux%u is %lld pixels, above the limit of %lld",
			 cinfo.image_width, cinfo.image_height,
			 (long long)cinfo.image_width * (long long)cinfo.image_height, max_pixels);
		jpeg_destroy_decompress(&cinfo);
		return MLTJ_ERR_TOO_LARGE;
	}

	switch (cinfo.jpeg_color_space) {
	case JCS_GRAYSCALE:
	case JCS_YCbCr:
	case JCS_RGB:
		cinfo.out_color_space = JCS_RGB;
		break;
	case JCS_CMYK:
	case JCS_YCCK:
		cinfo.out_color_space = JCS_CMYK;
		break;
	default:
		snprintf(info->msg, MLTJ_MSG_LEN,
			 "no RGB conversion for %d components (color space %d)",
			 cinfo.num_components, (int)cinfo.jpeg_color_space);
		jpeg_destroy_decompress(&cinfo);
		return MLTJ_ERR_UNSUPPORTED;
	}

	/* The smallest M/8 that still covers the minimum: the caller's resize
	 * then only shrinks. libjpeg-turbo's own arithmetic decides the size
	 * (ceil(side*M/8)), so the pick and the decode cannot disagree. */
	if (flags & MLTJ_FAST_UPSAMPLE)
		cinfo.do_fancy_upsampling = FALSE;
	cinfo.scale_denom = 8;
	for (m = (min_w > 0 || min_h > 0) ? 1 : 8; m <= 8; m++) {
		cinfo.scale_num = (unsigned)m;
		jpeg_calc_output_dimensions(&cinfo);
		if ((min_w <= 0 || cinfo.output_width >= (JDIMENSION)min_w) &&
		    (min_h <= 0 || cinfo.output_height >= (JDIMENSION)min_h))
			break;
	}
	if (m > 8) {
		cinfo.scale_num = 8;
		jpeg_calc_output_dimensions(&cinfo);
	}
	info->out_width = (int)cinfo.output_width;
	info->out_height = (int)cinfo.output_height;

	stride = (size_t)cinfo.output_width * 3;
	need = stride * cinfo.output_height;
	if (dst == NULL || dst_cap < need) {
		jpeg_destroy_decompress(&cinfo);
		return MLTJ_NEED_BUFFER;
	}

	jpeg_start_decompress(&cinfo);
	if (cinfo.out_color_space == JCS_RGB) {
		while (cinfo.output_scanline < cinfo.output_height) {
			JDIMENSION y = cinfo.output_scanline, k, n = cinfo.output_height - y;
			if (n > ROWS_PER_READ)
				n = ROWS_PER_READ;
			for (k = 0; k < n; k++)
				rows[k] = dst + (size_t)(y + k) * stride;
			if (jpeg_read_scanlines(&cinfo, rows, n) == 0)
				break;
		}
	} else {
		/* CMYK and YCCK (Adobe files, inverted CMYK) come out as CMYK. */
		JSAMPARRAY buf = (*cinfo.mem->alloc_sarray)((j_common_ptr)&cinfo, JPOOL_IMAGE,
							    cinfo.output_width * 4, ROWS_PER_READ);
		int inverted = cinfo.saw_Adobe_marker || cinfo.jpeg_color_space == JCS_YCCK;
		while (cinfo.output_scanline < cinfo.output_height) {
			JDIMENSION y = cinfo.output_scanline, k;
			JDIMENSION got = jpeg_read_scanlines(&cinfo, buf, ROWS_PER_READ);
			if (got == 0)
				break;
			for (k = 0; k < got; k++)
				cmyk_to_rgb(buf[k], dst + (size_t)(y + k) * stride,
					    cinfo.output_width, inverted);
		}
	}
	/* jpeg_mem_src never suspends, so no progress means a decoder fault. */
	if (cinfo.output_scanline < cinfo.output_height) {
		snprintf(info->msg, MLTJ_MSG_LEN, "decoder stopped at row %u of %u",
			 cinfo.output_scanline, cinfo.output_height);
		jpeg_destroy_decompress(&cinfo);
		return MLTJ_ERR_JPEG;
	}
	jpeg_finish_decompress(&cinfo);
	jpeg_destroy_decompress(&cinfo);
	return MLTJ_OK;
}
