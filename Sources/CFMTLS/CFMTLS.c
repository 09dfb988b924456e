#include "CFMTLS.h"

#include <stdio.h>

#if defined(__linux__)
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

// OpenSSL's stable ABI numbers (ssl.h, tls1.h): SSL_get_error's answers and the ctrl that sets the minimum version.
#define SSL_ERROR_SSL 1
#define SSL_ERROR_WANT_READ 2
#define SSL_ERROR_WANT_WRITE 3
#define SSL_ERROR_SYSCALL 5
#define SSL_ERROR_ZERO_RETURN 6
#define SSL_CTRL_SET_MIN_PROTO_VERSION 123
#define TLS1_2_VERSION 0x0303
#define SSL_FILETYPE_PEM 1

typedef int (*fmtls_password_callback)(char *, int, int, void *);

static struct {
    const void *(*server_method)(void);
    void *(*ctx_new)(const void *);
    void (*ctx_free)(void *);
    long (*ctx_ctrl)(void *, int, long, void *);
    void (*ctx_set_default_passwd_cb)(void *, fmtls_password_callback);
    int (*ctx_use_certificate_chain_file)(void *, const char *);
    int (*ctx_use_private_key_file)(void *, const char *, int);
    int (*ctx_check_private_key)(const void *);
    void *(*ssl_new)(void *);
    void (*ssl_free)(void *);
    int (*ssl_set_fd)(void *, int);
    int (*ssl_accept)(void *);
    int (*ssl_read)(void *, void *, int);
    int (*ssl_write)(void *, const void *, int);
    int (*ssl_pending)(const void *);
    int (*ssl_get_error)(const void *, int);
    int (*ssl_shutdown)(void *);
    unsigned long (*err_get_error)(void);
    void (*err_clear_error)(void);
    void (*err_error_string_n)(unsigned long, char *, size_t);
} api;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded = 0;

#define RESOLVE(handle, library, field, name) do { \
    *(void **)(&api.field) = dlsym(handle, name); \
    if (api.field == NULL) { snprintf(error, errorSize, "%s has no %s", library, name); goto fail; } \
} while (0)

int fmtls_load(char *error, size_t errorSize) {
    pthread_mutex_lock(&load_lock);
    if (loaded) { pthread_mutex_unlock(&load_lock); return 0; }
    void *crypto = NULL;
    void *ssl = NULL;
    crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (crypto == NULL) {
        const char *reason = dlerror();
        snprintf(error, errorSize, "%s", reason ? reason : "cannot load libcrypto.so.3");
        goto fail;
    }
    ssl = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (ssl == NULL) {
        const char *reason = dlerror();
        snprintf(error, errorSize, "%s", reason ? reason : "cannot load libssl.so.3");
        goto fail;
    }
    RESOLVE(ssl, "libssl.so.3", server_method, "TLS_server_method");
    RESOLVE(ssl, "libssl.so.3", ctx_new, "SSL_CTX_new");
    RESOLVE(ssl, "libssl.so.3", ctx_free, "SSL_CTX_free");
    RESOLVE(ssl, "libssl.so.3", ctx_ctrl, "SSL_CTX_ctrl");
    RESOLVE(ssl, "libssl.so.3", ctx_set_default_passwd_cb, "SSL_CTX_set_default_passwd_cb");
    RESOLVE(ssl, "libssl.so.3", ctx_use_certificate_chain_file, "SSL_CTX_use_certificate_chain_file");
    RESOLVE(ssl, "libssl.so.3", ctx_use_private_key_file, "SSL_CTX_use_PrivateKey_file");
    RESOLVE(ssl, "libssl.so.3", ctx_check_private_key, "SSL_CTX_check_private_key");
    RESOLVE(ssl, "libssl.so.3", ssl_new, "SSL_new");
    RESOLVE(ssl, "libssl.so.3", ssl_free, "SSL_free");
    RESOLVE(ssl, "libssl.so.3", ssl_set_fd, "SSL_set_fd");
    RESOLVE(ssl, "libssl.so.3", ssl_accept, "SSL_accept");
    RESOLVE(ssl, "libssl.so.3", ssl_read, "SSL_read");
    RESOLVE(ssl, "libssl.so.3", ssl_write, "SSL_write");
    RESOLVE(ssl, "libssl.so.3", ssl_pending, "SSL_pending");
    RESOLVE(ssl, "libssl.so.3", ssl_get_error, "SSL_get_error");
    RESOLVE(ssl, "libssl.so.3", ssl_shutdown, "SSL_shutdown");
    RESOLVE(crypto, "libcrypto.so.3", err_get_error, "ERR_get_error");
    RESOLVE(crypto, "libcrypto.so.3", err_clear_error, "ERR_clear_error");
    RESOLVE(crypto, "libcrypto.so.3", err_error_string_n, "ERR_error_string_n");
    loaded = 1;
    pthread_mutex_unlock(&load_lock);
    return 0;
fail:
    memset(&api, 0, sizeof api);
    if (ssl != NULL) { dlclose(ssl); }
    if (crypto != NULL) { dlclose(crypto); }
    pthread_mutex_unlock(&load_lock);
    return -1;
}

/// Appends OpenSSL's queued errors, the deepest cause first, to `error` (as many as fit), and empties the
/// thread's queue. Returns the last (outermost) error code, 0 when there was none.
static unsigned long append_errors(char *error, size_t errorSize) {
    unsigned long code, last = 0;
    const char *separator = ": ";
    while ((code = api.err_get_error()) != 0) {
        last = code;
        size_t used = strlen(error);
        if (used + 4 >= errorSize) { continue; }
        char text[256];
        api.err_error_string_n(code, text, sizeof text);
        snprintf(error + used, errorSize - used, "%s%s", separator, text);
        separator = "; ";
    }
    return last;
}

/// An encrypted key would make OpenSSL ask for its passphrase on the terminal: answer none, so it fails.
static int no_password(char *buffer, int size, int writing, void *data) {
    (void)buffer; (void)size; (void)writing; (void)data;
    return 0;
}

void *fmtls_context_new(const char *certificateFile, const char *keyFile, char *error, size_t errorSize) {
    if (errorSize > 0) { error[0] = 0; }
    if (!loaded) { snprintf(error, errorSize, "OpenSSL is not loaded"); return NULL; }
    api.err_clear_error();
    void *context = api.ctx_new(api.server_method());
    if (context == NULL) {
        snprintf(error, errorSize, "cannot create a TLS context");
        append_errors(error, errorSize);
        return NULL;
    }
    api.ctx_set_default_passwd_cb(context, no_password);
    if (api.ctx_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL) != 1) {
        snprintf(error, errorSize, "cannot require TLS 1.2 or later");
        goto fail;
    }
    if (api.ctx_use_certificate_chain_file(context, certificateFile) != 1) {
        snprintf(error, errorSize, "cannot use the TLS certificate %s (a PEM certificate, or a chain starting with the server's)",
                 certificateFile);
        goto fail;
    }
    if (api.ctx_use_private_key_file(context, keyFile, SSL_FILETYPE_PEM) != 1) {
        // OpenSSL checks the key against the certificate as it loads it: X509's KEY_TYPE_MISMATCH (115) or
        // KEY_VALUES_MISMATCH (116), library 11 (ERR_GET_LIB: bits 23-30, ERR_GET_REASON: the low 23 bits).
        char reasons[768] = "";
        unsigned long last = append_errors(reasons, sizeof reasons);
        unsigned long library = (last >> 23) & 0xFF, reason = last & 0x7FFFFF;
        if (library == 11 && (reason == 115 || reason == 116)) {
            snprintf(error, errorSize, "the TLS key %s does not match the certificate %s%s", keyFile, certificateFile, reasons);
        } else {
            snprintf(error, errorSize, "cannot use the TLS key %s (an unencrypted PEM private key of the certificate %s)%s",
                     keyFile, certificateFile, reasons);
        }
        api.ctx_free(context);
        return NULL;
    }
    if (api.ctx_check_private_key(context) != 1) {
        snprintf(error, errorSize, "the TLS key %s does not match the certificate %s", keyFile, certificateFile);
        goto fail;
    }
    return context;
fail:
    append_errors(error, errorSize);
    api.ctx_free(context);
    return NULL;
}

void fmtls_context_free(void *context) { if (context != NULL) { api.ctx_free(context); } }

void *fmtls_session_new(void *context, int fd) {
    void *session = api.ssl_new(context);
    if (session == NULL) { api.err_clear_error(); return NULL; }
    if (api.ssl_set_fd(session, fd) != 1) {
        api.err_clear_error();
        api.ssl_free(session);
        return NULL;
    }
    return session;
}

void fmtls_session_free(void *session) { if (session != NULL) { api.ssl_free(session); } }

/// OpenSSL writes to the socket with write(2), which raises SIGPIPE when the connection's sending side is shut down
/// (the peer reset it, or the server's stop or eviction shut it down); plain writes avoid it with MSG_NOSIGNAL. So
/// every session call that may write runs with SIGPIPE blocked on the calling thread, and a SIGPIPE it raised is
/// taken off the thread's pending set before the mask is restored: the process never sees it, whatever its
/// SIGPIPE disposition (an application may have installed a handler, or restored the default, which kills).
typedef struct {
    sigset_t previous;
    int wasPending;
} sigpipe_guard;

static void sigpipe_block(sigpipe_guard *guard) {
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &guard->previous);
    sigemptyset(&pending);
    guard->wasPending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

static void sigpipe_restore(const sigpipe_guard *guard) {
    if (!guard->wasPending) {
        sigset_t pipe, pending;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        sigemptyset(&pending);
        if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
            const struct timespec now = {0, 0};
            int saved = errno;
            while (sigtimedwait(&pipe, NULL, &now) < 0 && errno == EINTR) {}
            errno = saved;
        }
    }
    pthread_sigmask(SIG_SETMASK, &guard->previous, NULL);
}

/// What SSL_get_error makes of `result`; the thread's error queue is left empty.
static int outcome(void *session, int result) {
    int reason = api.ssl_get_error(session, result);
    api.err_clear_error();
    switch (reason) {
    case SSL_ERROR_WANT_READ: return FMTLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return FMTLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default: return FMTLS_FAILED;
    }
}

int fmtls_accept(void *session, char *error, size_t errorSize) {
    if (errorSize > 0) { error[0] = 0; }
    api.err_clear_error();
    sigpipe_guard guard;
    sigpipe_block(&guard);
    int result = api.ssl_accept(session);
    sigpipe_restore(&guard);
    if (result == 1) { return 1; }
    int reason = api.ssl_get_error(session, result);
    if (reason == SSL_ERROR_WANT_READ) { api.err_clear_error(); return FMTLS_WANT_READ; }
    if (reason == SSL_ERROR_WANT_WRITE) { api.err_clear_error(); return FMTLS_WANT_WRITE; }
    snprintf(error, errorSize, "TLS handshake failed");
    append_errors(error, errorSize);
    api.err_clear_error();
    return FMTLS_FAILED;
}

int fmtls_read(void *session, void *buffer, int count) {
    api.err_clear_error();
    sigpipe_guard guard;
    sigpipe_block(&guard);
    int result = api.ssl_read(session, buffer, count);   // may write too (alerts, post-handshake messages)
    sigpipe_restore(&guard);
    if (result > 0) { return result; }
    int reason = outcome(session, result);
    return reason == 0 ? 0 : reason;
}

int fmtls_write(void *session, const void *buffer, int count) {
    api.err_clear_error();
    sigpipe_guard guard;
    sigpipe_block(&guard);
    int result = api.ssl_write(session, buffer, count);
    sigpipe_restore(&guard);
    if (result > 0) { return result; }
    int reason = outcome(session, result);
    return reason == 0 ? FMTLS_FAILED : reason;
}

int fmtls_pending(void *session) { return api.ssl_pending(session); }

void fmtls_shutdown(void *session) {
    api.err_clear_error();
    sigpipe_guard guard;
    sigpipe_block(&guard);
    (void)api.ssl_shutdown(session);
    sigpipe_restore(&guard);
    api.err_clear_error();
}

#else
// Other platforms (Apple): nothing loads; the emulator serves plain HTTP only there.
int fmtls_load(char *error, size_t errorSize) {
    if (errorSize > 0) { snprintf(error, errorSize, "OpenSSL 3 is loaded on Linux only"); }
    return -1;
}
void *fmtls_context_new(const char *certificateFile, const char *keyFile, char *error, size_t errorSize) {
    (void)certificateFile; (void)keyFile;
    if (errorSize > 0) { error[0] = 0; }
    return 0;
}
void fmtls_context_free(void *context) { (void)context; }
void *fmtls_session_new(void *context, int fd) { (void)context; (void)fd; return 0; }
void fmtls_session_free(void *session) { (void)session; }
int fmtls_accept(void *session, char *error, size_t errorSize) {
    (void)session;
    if (errorSize > 0) { error[0] = 0; }
    return FMTLS_FAILED;
}
int fmtls_read(void *session, void *buffer, int count) { (void)session; (void)buffer; (void)count; return FMTLS_FAILED; }
int fmtls_write(void *session, const void *buffer, int count) { (void)session; (void)buffer; (void)count; return FMTLS_FAILED; }
int fmtls_pending(void *session) { (void)session; return 0; }
void fmtls_shutdown(void *session) { (void)session; }
#endif
