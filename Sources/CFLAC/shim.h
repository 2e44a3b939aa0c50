#ifndef CFLAC_SHIM_H
#define CFLAC_SHIM_H
#include <FLAC/stream_decoder.h>
#endif
