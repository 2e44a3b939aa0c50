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
#endif
