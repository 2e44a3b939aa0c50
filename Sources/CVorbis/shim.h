#ifndef CVORBIS_SHIM_H
#define CVORBIS_SHIM_H
/* libvorbis's synthesis API; libogg only for its ogg_packet struct (our own parser pages). */
#include <vorbis/codec.h>
#endif
