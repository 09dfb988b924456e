#include "CFMCurl.h"

#if defined(__linux__)
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

// What curl_multi_info_read returns (curl.h's CURLMsg: an enum, the easy handle, a union of a pointer and
// a CURLcode).
typedef struct {
    int msg;
    void *easy_handle;
    union { void *whatever; int result; } data;
} fmcurl_message;

typedef struct {
    unsigned int age;
    const char *version;
} fmcurl_version_head;

static struct {
    int (*global_init)(long);
    void *(*version_info)(int);
    void *(*easy_init)(void);
    void (*easy_cleanup)(void *);
    void (*easy_reset)(void *);
    int (*easy_setopt)(void *, int, ...);
    int (*easy_getinfo)(void *, int, ...);
    int (*easy_pause)(void *, int);
    const char *(*easy_strerror)(int);
    void *(*multi_init)(void);
    int (*multi_cleanup)(void *);
    int (*multi_setopt)(void *, int, ...);
    int (*multi_add_handle)(void *, void *);
    int (*multi_remove_handle)(void *, void *);
    int (*multi_perform)(void *, int *);
    int (*multi_poll)(void *, void *, unsigned int, int, int *);
    int (*multi_wakeup)(void *);
    fmcurl_message *(*multi_info_read)(void *, int *);
    void *(*slist_append)(void *, const char *);
    void (*slist_free_all)(void *);
    const char *version;
} api;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded = 0;

#define RESOLVE(field, name) do { \
    *(void **)(&api.field) = dlsym(handle, name); \
    if (api.field == NULL) { snprintf(error, errorSize, "%s has no %s", path, name); goto fail; } \
} while (0)

int fmcurl_load(const char *path, char *error, size_t errorSize) {
    pthread_mutex_lock(&load_lock);
    if (loaded) { pthread_mutex_unlock(&load_lock); return 0; }
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *reason = dlerror();
        snprintf(error, errorSize, "%s", reason ? reason : "dlopen failed");
        pthread_mutex_unlock(&load_lock);
        return -1;
    }
    RESOLVE(global_init, "curl_global_init");
    RESOLVE(version_info, "curl_version_info");
    RESOLVE(easy_init, "curl_easy_init");
    RESOLVE(easy_cleanup, "curl_easy_cleanup");
    RESOLVE(easy_reset, "curl_easy_reset");
    RESOLVE(easy_setopt, "curl_easy_setopt");
    RESOLVE(easy_getinfo, "curl_easy_getinfo");
    RESOLVE(easy_pause, "curl_easy_pause");
    RESOLVE(easy_strerror, "curl_easy_strerror");
    RESOLVE(multi_init, "curl_multi_init");
    RESOLVE(multi_cleanup, "curl_multi_cleanup");
    RESOLVE(multi_setopt, "curl_multi_setopt");
    RESOLVE(multi_add_handle, "curl_multi_add_handle");
    RESOLVE(multi_remove_handle, "curl_multi_remove_handle");
    RESOLVE(multi_perform, "curl_multi_perform");
    RESOLVE(multi_poll, "curl_multi_poll");     // 7.66
    RESOLVE(multi_wakeup, "curl_multi_wakeup"); // 7.68
    RESOLVE(multi_info_read, "curl_multi_info_read");
    RESOLVE(slist_append, "curl_slist_append");
    RESOLVE(slist_free_all, "curl_slist_free_all");
    // CURL_GLOBAL_SSL | CURL_GLOBAL_WIN32 (CURL_GLOBAL_ALL); reference-counted by libcurl.
    if (api.global_init(3L) != 0) { snprintf(error, errorSize, "curl_global_init failed"); goto fail; }
    {
        // CURLVERSION_NOW is the newest struct age; age 0's first fields are all SwiftFM reads.
        fmcurl_version_head *info = api.version_info(0);
        api.version = info ? info->version : NULL;
    }
    loaded = 1;
    pthread_mutex_unlock(&load_lock);
    return 0;
fail:
    memset(&api, 0, sizeof api);
    dlclose(handle);
    pthread_mutex_unlock(&load_lock);
    return -1;
}

const char *fmcurl_version(void) { return loaded ? api.version : NULL; }

void *fmcurl_easy_init(void) { return api.easy_init(); }
void fmcurl_easy_cleanup(void *easy) { api.easy_cleanup(easy); }
void fmcurl_easy_reset(void *easy) { api.easy_reset(easy); }
int fmcurl_easy_setopt_long(void *easy, int option, long value) { return api.easy_setopt(easy, option, value); }
int fmcurl_easy_setopt_ptr(void *easy, int option, const void *value) { return api.easy_setopt(easy, option, value); }
int fmcurl_easy_setopt_off(void *easy, int option, int64_t value) { return api.easy_setopt(easy, option, (int64_t)value); }
int fmcurl_easy_getinfo_long(void *easy, int info, long *value) { return api.easy_getinfo(easy, info, value); }
int fmcurl_easy_getinfo_ptr(void *easy, int info, void **value) { return api.easy_getinfo(easy, info, value); }
int fmcurl_easy_pause(void *easy, int bitmask) { return api.easy_pause(easy, bitmask); }
const char *fmcurl_easy_strerror(int code) { return api.easy_strerror(code); }

void *fmcurl_multi_init(void) { return api.multi_init(); }
int fmcurl_multi_cleanup(void *multi) { return api.multi_cleanup(multi); }
int fmcurl_multi_setopt_long(void *multi, int option, long value) { return api.multi_setopt(multi, option, value); }
int fmcurl_multi_add_handle(void *multi, void *easy) { return api.multi_add_handle(multi, easy); }
int fmcurl_multi_remove_handle(void *multi, void *easy) { return api.multi_remove_handle(multi, easy); }
int fmcurl_multi_perform(void *multi, int *running) { return api.multi_perform(multi, running); }
int fmcurl_multi_poll(void *multi, int timeoutMilliseconds) { return api.multi_poll(multi, NULL, 0, timeoutMilliseconds, NULL); }
int fmcurl_multi_wakeup(void *multi) { return api.multi_wakeup(multi); }

int fmcurl_multi_next_done(void *multi, void **easy, int *result) {
    int left = 0;
    fmcurl_message *message;
    while ((message = api.multi_info_read(multi, &left)) != NULL) {
        if (message->msg == 1) { // CURLMSG_DONE
            *easy = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

void *fmcurl_slist_append(void *list, const char *string) { return api.slist_append(list, string); }
void fmcurl_slist_free_all(void *list) { api.slist_free_all(list); }

#else
// Other platforms: nothing loads (SwiftFM uses URLSession there).
int fmcurl_load(const char *path, char *error, size_t errorSize) {
    (void)path;
    if (errorSize > 0) { error[0] = 0; }
    return -1;
}
const char *fmcurl_version(void) { return 0; }
void *fmcurl_easy_init(void) { return 0; }
void fmcurl_easy_cleanup(void *easy) { (void)easy; }
void fmcurl_easy_reset(void *easy) { (void)easy; }
int fmcurl_easy_setopt_long(void *easy, int option, long value) { (void)easy; (void)option; (void)value; return 2; }
int fmcurl_easy_setopt_ptr(void *easy, int option, const void *value) { (void)easy; (void)option; (void)value; return 2; }
int fmcurl_easy_setopt_off(void *easy, int option, int64_t value) { (void)easy; (void)option; (void)value; return 2; }
int fmcurl_easy_getinfo_long(void *easy, int info, long *value) { (void)easy; (void)info; (void)value; return 2; }
int fmcurl_easy_getinfo_ptr(void *easy, int info, void **value) { (void)easy; (void)info; (void)value; return 2; }
int fmcurl_easy_pause(void *easy, int bitmask) { (void)easy; (void)bitmask; return 2; }
const char *fmcurl_easy_strerror(int code) { (void)code; return ""; }
void *fmcurl_multi_init(void) { return 0; }
int fmcurl_multi_cleanup(void *multi) { (void)multi; return 0; }
int fmcurl_multi_setopt_long(void *multi, int option, long value) { (void)multi; (void)option; (void)value; return 2; }
int fmcurl_multi_add_handle(void *multi, void *easy) { (void)multi; (void)easy; return 2; }
int fmcurl_multi_remove_handle(void *multi, void *easy) { (void)multi; (void)easy; return 2; }
int fmcurl_multi_perform(void *multi, int *running) { (void)multi; (void)running; return 2; }
int fmcurl_multi_poll(void *multi, int timeoutMilliseconds) { (void)multi; (void)timeoutMilliseconds; return 2; }
int fmcurl_multi_wakeup(void *multi) { (void)multi; return 2; }
int fmcurl_multi_next_done(void *multi, void **easy, int *result) { (void)multi; (void)easy; (void)result; return 0; }
void *fmcurl_slist_append(void *list, const char *string) { (void)list; (void)string; return 0; }
void fmcurl_slist_free_all(void *list) { (void)list; }
#endif
