#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
// Types and constants only: libcurl is loaded with dlopen at the first https:// request
// (CurlLibrary.swift), so neither `streamplay --help` nor http:// playback maps it.
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are C varargs: Swift calls them through these typed
// shims, which take the dlsym'd function pointer (as void *: Swift cannot import a pointer to a
// varargs function).
typedef CURLcode (*ccurl_setopt_fn)(CURL *, CURLoption, ...);
typedef CURLcode (*ccurl_getinfo_fn)(CURL *, CURLINFO, ...);
typedef size_t (*ccurl_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);
static inline CURLcode ccurl_setopt_long(void *f, CURL *h, CURLoption o, long v) { return ((ccurl_setopt_fn)f)(h, o, v); }
static inline CURLcode ccurl_setopt_string(void *f, CURL *h, CURLoption o, const char *v) { return ((ccurl_setopt_fn)f)(h, o, v); }
static inline CURLcode ccurl_setopt_pointer(void *f, CURL *h, CURLoption o, void *v) { return ((ccurl_setopt_fn)f)(h, o, v); }
static inline CURLcode ccurl_setopt_slist(void *f, CURL *h, CURLoption o, struct curl_slist *v) { return ((ccurl_setopt_fn)f)(h, o, v); }
static inline CURLcode ccurl_setopt_callback(void *f, CURL *h, CURLoption o, ccurl_data_callback v) { return ((ccurl_setopt_fn)f)(h, o, v); }
static inline CURLcode ccurl_getinfo_long(void *f, CURL *h, CURLINFO i, long *v) { return ((ccurl_getinfo_fn)f)(h, i, v); }
static inline CURLcode ccurl_getinfo_string(void *f, CURL *h, CURLINFO i, char **v) { return ((ccurl_getinfo_fn)f)(h, i, v); }
// CURL_WRITEFUNC_PAUSE and CURLPAUSE_CONT are macros Swift does not import.
static inline size_t ccurl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline int ccurl_pause_cont(void) { return CURLPAUSE_CONT; }
#endif
