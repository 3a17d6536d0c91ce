/* gen.c -- writes the JPEG fixtures in ../ that image/jpeg cannot encode:
 * CMYK and YCCK (Adobe, inverted CMYK as Photoshop writes it), progressive,
 * arithmetic-coded, restart markers, 4:4:4, 4:2:2, RGB (no JFIF) and
 * progressive gray. All show the same 45x29 picture (odd sizes: partial
 * MCUs). baseline.jpg, progressive.jpg and arithmetic.jpg share their
 * quantized coefficients, so they must decode to identical pixels.
 *
 *   cd native/turbojpeg/testdata && cc -O2 -o /tmp/gen gen/gen.c -ljpeg && /tmp/gen
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

#define W 45
#define H 29

enum kind { YCC420, YCC444, YCC422, RGB, GRAY, CMYK, YCCK };

/* A smooth picture with one sharp-edged block: r, g, b in 0..255. */
static void pixel(int x, int y, int *r, int *g, int *b)
{
	*r = (int)(128 + 100 * sin(x / 7.0) * cos(y / 5.0));
	*g = (int)(128 + 90 * cos((x + y) / 9.0));
	*b = (int)(40 + 4 * x + 2 * y) % 256;
	if (x >= 12 && x < 24 && y >= 8 && y < 18) {
		*r = 230;
		*g = 40;
		*b = 60;
	}
}

static void write(const char *name, enum kind kind, int progressive, int arith, int restart)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	unsigned char row[W * 4];
	FILE *f = fopen(name, "wb");
	if (f == NULL) {
		perror(name);
		exit(1);
	}
	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	jpeg_stdio_dest(&c, f);
	c.image_width = W;
	c.image_height = H;
	c.input_components = kind == GRAY ? 1 : (kind == CMYK || kind == YCCK) ? 4 : 3;
	c.in_color_space = kind == GRAY ? JCS_GRAYSCALE : (kind == CMYK || kind == YCCK) ? JCS_CMYK : JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, 90, TRUE);
	if (kind == RGB)
		jpeg_set_colorspace(&c, JCS_RGB);
	if (kind == CMYK)
		jpeg_set_colorspace(&c, JCS_CMYK); /* Adobe marker, transform 0 */
	if (kind == YCCK)
		jpeg_set_colorspace(&c, JCS_YCCK); /* Adobe marker, transform 2 */
	if (kind == YCC444)
		c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = 1;
	if (kind == YCC422)
		c.comp_info[0].v_samp_factor = 1;
	if (progressive)
		jpeg_simple_progression(&c);
	c.arith_code = arith ? TRUE : FALSE;
	c.restart_in_rows = restart;
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < H) {
		int x, y = (int)c.next_scanline;
		JSAMPROW rp = row;
		for (x = 0; x < W; x++) {
			int r, g, b;
			pixel(x, y, &r, &g, &b);
			if (kind == GRAY) {
				row[x] = (unsigned char)((r * 77 + g * 150 + b * 29) >> 8);
			} else if (kind == CMYK || kind == YCCK) {
				/* Inverted CMYK (255 = no ink), K from the darkest channel. */
				int k = 255 - (r > g ? (r > b ? r : b) : (g > b ? g : b));
				int d = 255 - k;
				row[4 * x + 0] = (unsigned char)(d ? 255 - (d - r) * 255 / d : 255);
				row[4 * x + 1] = (unsigned char)(d ? 255 - (d - g) * 255 / d : 255);
				row[4 * x + 2] = (unsigned char)(d ? 255 - (d - b) * 255 / d : 255);
				row[4 * x + 3] = (unsigned char)(255 - k);
			} else {
				row[3 * x + 0] = (unsigned char)r;
				row[3 * x + 1] = (unsigned char)g;
				row[3 * x + 2] = (unsigned char)b;
			}
		}
		jpeg_write_scanlines(&c, &rp, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	fclose(f);
}

int main(void)
{
	write("baseline.jpg", YCC420, 0, 0, 0);
	write("progressive.jpg", YCC420, 1, 0, 0);
	write("arithmetic.jpg", YCC420, 0, 1, 0);
	write("restart.jpg", YCC420, 0, 0, 1);
	write("ycc444.jpg", YCC444, 0, 0, 0);
	write("ycc422.jpg", YCC422, 0, 0, 0);
	write("rgb.jpg", RGB, 0, 0, 0);
	write("gray_progressive.jpg", GRAY, 1, 0, 0);
	write("cmyk.jpg", CMYK, 0, 0, 0);
	write("ycck.jpg", YCCK, 0, 0, 0);
	return 0;
}
