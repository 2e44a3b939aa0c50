#ifndef CVIPS_SHIM_H
#define CVIPS_SHIM_H
#include <stddef.h>
// Declarations only, and not <vips/vips.h>: libvips is loaded with dlopen by the cover worker
// alone (VipsLibrary.swift), so the server and its other workers never map it and its ~100
// dependencies (its headers also need glib's include paths, which SwiftPM gives only through
// pkg-config, and that would link it into streamd). The few declarations used, as libvips 8.x
// declares them:

/// VipsImage, opaque here (a GObject: released with g_object_unref).
typedef struct CVipsImage CVipsImage;
/// VipsSize: VIPS_SIZE_DOWN, only ever shrink.
enum { CVIPS_SIZE_DOWN = 2 };
/// VipsFailOn: VIPS_FAIL_ON_ERROR, a truncated or damaged image is an error, not a grey half.
enum { CVIPS_FAIL_ON_ERROR = 2 };
/// VipsAccess: VIPS_ACCESS_SEQUENTIAL (a header read decodes no pixels).
enum { CVIPS_ACCESS_SEQUENTIAL = 1 };

// The C varargs calls (options as name/value pairs ending in NULL), which Swift cannot make: one
// typed shim per call used, taking the dlsym'd function pointer as void *.
typedef CVipsImage *(*cvips_image_new_from_buffer_fn)(const void *buf, size_t len, const char *options, ...);
typedef int (*cvips_thumbnail_buffer_fn)(void *buf, size_t len, CVipsImage **out, int width, ...);
typedef int (*cvips_jpegsave_buffer_fn)(CVipsImage *in, void **buf, size_t *len, ...);
typedef void *(*cvips_array_double_newv_fn)(int n, ...);

/// The image's header only (no pixels decoded): NULL when libvips does not recognise it.
static inline CVipsImage *cvips_header(void *f, const void *buf, size_t len) {
    return ((cvips_image_new_from_buffer_fn)f)(buf, len, "", "access", CVIPS_ACCESS_SEQUENTIAL, NULL);
}

/// A thumbnail whose longer side is `size` (aspect kept, never enlarged), shrunk on load when the
/// format allows; 0 on success.
static inline int cvips_thumbnail(void *f, const void *buf, size_t len, int size, CVipsImage **out) {
    return ((cvips_thumbnail_buffer_fn)f)((void *)buf, len, out, size, "height", size, "size", CVIPS_SIZE_DOWN,
                                          "fail_on", CVIPS_FAIL_ON_ERROR, NULL);
}

/// A one-element background (every band), for flattening transparency before JPEG.
static inline void *cvips_background(void *f, double value) {
    return ((cvips_array_double_newv_fn)f)(1, value);
}

/// The image as a baseline JPEG of `quality`, metadata stripped, transparency flattened onto
/// `background`; the buffer is g_free'd by the caller. 0 on success.
static inline int cvips_jpegsave(void *f, CVipsImage *in, int quality, void *background, void **buf, size_t *len) {
    return ((cvips_jpegsave_buffer_fn)f)(in, buf, len, "Q", quality, "strip", 1, "background", background, NULL);
}
#endif
