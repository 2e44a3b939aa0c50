#ifndef COPUSENC_SHIM_H
#define COPUSENC_SHIM_H
#include <opus/opusenc.h>

/* ope_encoder_ctl is a C varargs call driven by macros, which Swift cannot make: one shim per request used. */
static inline int copusenc_set_bitrate(OggOpusEnc *enc, opus_int32 bitsPerSecond) {
    return ope_encoder_ctl(enc, OPUS_SET_BITRATE(bitsPerSecond));
}

static inline int copusenc_set_muxing_delay(OggOpusEnc *enc, opus_int32 samples) {
    return ope_encoder_ctl(enc, OPE_SET_MUXING_DELAY(samples));
}

static inline int copusenc_set_comment_padding(OggOpusEnc *enc, opus_int32 bytes) {
    return ope_encoder_ctl(enc, OPE_SET_COMMENT_PADDING(bytes));
}

static inline int copusenc_set_serialno(OggOpusEnc *enc, opus_int32 serial) {
    return ope_encoder_ctl(enc, OPE_SET_SERIALNO(serial));
}
/* 0: hard CBR, every packet the same size (an estimated Content-Length, transcodes with estimate=1). */
static inline int copusenc_set_vbr(OggOpusEnc *enc, opus_int32 vbr) {
    return ope_encoder_ctl(enc, OPUS_SET_VBR(vbr));
}
#endif
