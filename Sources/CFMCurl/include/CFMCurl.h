#ifndef CFMCURL_H
#define CFMCURL_H

// SwiftFM's bridge to the system's libcurl (Linux): loads `libcurl.so.4` at run time with dlopen/dlsym and
// wraps the variadic calls (curl_easy_setopt, curl_multi_setopt, curl_easy_getinfo) in functions with fixed
// argument types, so that the build needs no curl headers. Everything else is plain function pointers.
// Option numbers are curl's stable ABI; SwiftFM declares the few it uses itself.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Loads libcurl from `path` (e.g. "libcurl.so.4") and resolves every function SwiftFM uses; calls
/// curl_global_init once. Returns 0 on success, else -1, with a reason in `error` (NUL-terminated).
int fmcurl_load(const char *path, char *error, size_t errorSize);

/// The loaded library's version string (e.g. "7.88.1"), or NULL.
const char *fmcurl_version(void);

void *fmcurl_easy_init(void);
void fmcurl_easy_cleanup(void *easy);
/// Every option back to its default; the handle's caches (DNS, TLS sessions) and the multi handle's connections stay.
void fmcurl_easy_reset(void *easy);
int fmcurl_easy_setopt_long(void *easy, int option, long value);
int fmcurl_easy_setopt_ptr(void *easy, int option, const void *value);
int fmcurl_easy_setopt_off(void *easy, int option, int64_t value);
int fmcurl_easy_getinfo_long(void *easy, int info, long *value);
int fmcurl_easy_getinfo_ptr(void *easy, int info, void **value);
int fmcurl_easy_pause(void *easy, int bitmask);
const char *fmcurl_easy_strerror(int code);

void *fmcurl_multi_init(void);
int fmcurl_multi_cleanup(void *multi);
int fmcurl_multi_setopt_long(void *multi, int option, long value);
int fmcurl_multi_add_handle(void *multi, void *easy);
int fmcurl_multi_remove_handle(void *multi, void *easy);
int fmcurl_multi_perform(void *multi, int *running);
int fmcurl_multi_poll(void *multi, int timeoutMilliseconds);
int fmcurl_multi_wakeup(void *multi);
/// The next finished transfer: returns 1 and sets `easy` and `result`, or 0 when there is none.
int fmcurl_multi_next_done(void *multi, void **easy, int *result);

void *fmcurl_slist_append(void *list, const char *string);
void fmcurl_slist_free_all(void *list);

#ifdef __cplusplus
}
#endif
#endif
