#ifndef CSOXR_SHIM_H
#define CSOXR_SHIM_H
#include <soxr.h>
#endif
