#ifndef CSONIC_SHIM_H
#define CSONIC_SHIM_H
/* libsonic-dev ships no pkg-config file; the header and libsonic.so are in the default paths. */
#include <sonic.h>
#endif
