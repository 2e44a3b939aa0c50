#ifndef COPUS_SHIM_H
#define COPUS_SHIM_H
#include <opus/opus_multistream.h>   /* its own includes are relative: no -I needed */

/* opus_multistream_decoder_ctl is variadic, which Swift cannot call: one function per request used. */
static inline int copus_reset(OpusMSDecoder *decoder) {
    return opus_multistream_decoder_ctl(decoder, OPUS_RESET_STATE);
}

static inline int copus_set_gain(OpusMSDecoder *decoder, int q78) {
    return opus_multistream_decoder_ctl(decoder, OPUS_SET_GAIN(q78));
}

/* The encoder's requests (opus_encoder_ctl is variadic too). */
static inline int copus_encoder_set_bitrate(OpusEncoder *encoder, opus_int32 bitsPerSecond) {
    return opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitsPerSecond));
}

static inline int copus_encoder_set_vbr(OpusEncoder *encoder, opus_int32 on) {
    return opus_encoder_ctl(encoder, OPUS_SET_VBR(on));
}

static inline int copus_encoder_set_vbr_constraint(OpusEncoder *encoder, opus_int32 on) {
    return opus_encoder_ctl(encoder, OPUS_SET_VBR_CONSTRAINT(on));
}

static inline int copus_encoder_set_complexity(OpusEncoder *encoder, opus_int32 complexity) {
    return opus_encoder_ctl(encoder, OPUS_SET_COMPLEXITY(complexity));
}

static inline int copus_encoder_get_lookahead(OpusEncoder *encoder, opus_int32 *samples) {
    return opus_encoder_ctl(encoder, OPUS_GET_LOOKAHEAD(samples));
}
#endif
