#ifndef CFMTLS_H
#define CFMTLS_H

// The emulator's bridge to the system's OpenSSL 3 (Linux) for serving HTTPS: loads `libssl.so.3` and
// `libcrypto.so.3` at run time with dlopen/dlsym (the libraries FoundationNetworking already loads), so that
// the build needs no OpenSSL headers. Only what a TLS server needs is declared; every OpenSSL object is an
// opaque pointer. Sockets are non-blocking: the read, write and handshake calls return at once, and the caller
// waits (poll) for what they report wanting. Elsewhere (Apple platforms) nothing loads: fmtls_load fails.

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What a call wants before it can go on (its return value when it could not finish).
static const int FMTLS_WANT_READ = -2;
static const int FMTLS_WANT_WRITE = -3;
/// The session is over: the peer closed it, or a protocol or socket error.
static const int FMTLS_FAILED = -1;

/// Loads libssl.so.3 and libcrypto.so.3 once and resolves every function used. Returns 0, else -1 with a
/// reason in `error` (NUL-terminated).
int fmtls_load(char *error, size_t errorSize);

/// A server context: TLS 1.2 or later, the PEM certificate chain in `certificateFile` and the PEM private
/// key (not encrypted) in `keyFile`, checked to match. Returns NULL with a reason in `error` naming the file
/// at fault. fmtls_load must have succeeded.
void *fmtls_context_new(const char *certificateFile, const char *keyFile, char *error, size_t errorSize);
void fmtls_context_free(void *context);

/// A server session on the connected socket `fd` (which should be non-blocking); NULL when out of memory.
void *fmtls_session_new(void *context, int fd);
void fmtls_session_free(void *session);

/// Advances the handshake: 1 when done, FMTLS_WANT_READ/WRITE, or FMTLS_FAILED (reason in `error`).
int fmtls_accept(void *session, char *error, size_t errorSize);
/// Reads up to `count` bytes: the count (> 0), 0 at the peer's orderly close, FMTLS_WANT_READ/WRITE, or
/// FMTLS_FAILED.
int fmtls_read(void *session, void *buffer, int count);
/// Writes `count` bytes (all of them, or none: retry with the same arguments after a WANT): the count,
/// FMTLS_WANT_READ/WRITE, or FMTLS_FAILED.
int fmtls_write(void *session, const void *buffer, int count);
/// Decrypted bytes buffered in the session, readable without touching the socket.
int fmtls_pending(void *session);
/// Sends the close_notify alert (once; does not wait for the peer's).
void fmtls_shutdown(void *session);

#ifdef __cplusplus
}
#endif
#endif
