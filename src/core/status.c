/* status.c: version, status names, and the thread-local last-error message. */
#include "wk_core.h"
#include <stdarg.h>
#include <stdio.h>

static _Thread_local char wk_errbuf[1024];

unsigned wk_version(void) { return WK_VERSION_NUMBER; }
const char *wk_version_string(void) { return WK_VERSION_STRING; }

const char *wk_status_string(wk_status s)
{
    switch (s) {
    case WK_OK: return "WK_OK: success";
    case WK_ERR_INVALID_ARGUMENT: return "WK_ERR_INVALID_ARGUMENT: invalid argument";
    case WK_ERR_SHAPE: return "WK_ERR_SHAPE: shape mismatch";
    case WK_ERR_DTYPE: return "WK_ERR_DTYPE: dtype not allowed";
    case WK_ERR_LAYOUT: return "WK_ERR_LAYOUT: invalid layout";
    case WK_ERR_OVERFLOW: return "WK_ERR_OVERFLOW: size overflow";
    case WK_ERR_INDEX_OUT_OF_RANGE: return "WK_ERR_INDEX_OUT_OF_RANGE: index out of range";
    case WK_ERR_DEVICE_MISMATCH: return "WK_ERR_DEVICE_MISMATCH: operands on different devices";
    case WK_ERR_OUT_OF_MEMORY: return "WK_ERR_OUT_OF_MEMORY: out of memory";
    case WK_ERR_DEVICE: return "WK_ERR_DEVICE: device or driver error";
    case WK_ERR_NO_DEVICE: return "WK_ERR_NO_DEVICE: no such device";
    case WK_ERR_TIMEOUT: return "WK_ERR_TIMEOUT: timed out waiting for a peer or device";
    case WK_ERR_NOT_SUPPORTED: return "WK_ERR_NOT_SUPPORTED: not supported by this backend";
    case WK_ERR_IO: return "WK_ERR_IO: I/O error";
    case WK_ERR_FORMAT: return "WK_ERR_FORMAT: malformed file";
    case WK_ERR_INTERNAL: return "WK_ERR_INTERNAL: internal error";
    }
    return "WK_ERR_?: unknown status";
}

const char *wk_last_error(void) { return wk_errbuf; }

void wk_err_clear(void) { wk_errbuf[0] = '\0'; }

wk_status wk_err(wk_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(wk_errbuf, sizeof wk_errbuf, fmt, ap);
    va_end(ap);
    return s;
}
