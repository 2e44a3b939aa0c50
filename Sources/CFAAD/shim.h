#ifndef CFAAD_SHIM_H
#define CFAAD_SHIM_H
#include <neaacdec.h>
#endif
