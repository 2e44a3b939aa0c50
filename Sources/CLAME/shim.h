#ifndef CLAME_SHIM_H
#define CLAME_SHIM_H
#include <stdarg.h>
#include <lame/lame.h>

/* libmp3lame reports through printf-style callbacks taking a va_list, which Swift cannot
   define: this one drops the text (the wrapper checks every return code instead). */
static void clame_ignore_report(const char *format, va_list ap) {
    (void)format;
    (void)ap;
}

/* Silences libmp3lame's messages, debug output and error text on stderr. */
static inline void clame_quiet(lame_global_flags *flags) {
    lame_set_errorf(flags, clame_ignore_report);
    lame_set_debugf(flags, clame_ignore_report);
    lame_set_msgf(flags, clame_ignore_report);
}
#endif
