#ifndef CALSA_SHIM_H
#define CALSA_SHIM_H
// Types and constants only: libasound is loaded with dlopen when an ALSA output opens
// (ALSAOutput.swift), so no other run maps it.
#include <alsa/asoundlib.h>
#endif
