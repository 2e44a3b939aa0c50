#ifndef CRUBBERBAND_SHIM_H
#define CRUBBERBAND_SHIM_H
/* The C API of librubberband (GPL-2+): linked only by the bench program dspbench, never by
   streamplay, so the player stays distributable under its own terms. */
#include <rubberband/rubberband-c.h>
#endif
