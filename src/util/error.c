/*
 * error.c - error reports that carry the operation, the object and a kind.
 */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool err_set(pgd_error *err, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || err->set)
        return false;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->kind = PGD_ERR_FAILED;
    err->set = true;
    return false;
}

bool err_errno(pgd_error *err, int errnum, const char *fmt, ...)
{
    va_list ap;
    size_t len;

    if (err == NULL || err->set)
        return false;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    len = strlen(err->msg);
    snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(errnum));
    err->kind = PGD_ERR_FAILED;
    err->set = true;
    return false;
}

void err_prefix(pgd_error *err, const char *fmt, ...)
{
    char prefix[PGD_ERROR_MAX];
    char old[PGD_ERROR_MAX];
    va_list ap;

    if (err == NULL || !err->set)
        return;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    if (snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old) >= (int)sizeof(err->msg))
        memcpy(err->msg + sizeof(err->msg) - 4, "...", 4); /* say it was cut */
}

void err_mark(pgd_error *err, pgd_error_kind kind)
{
    if (err != NULL && err->set)
        err->kind = kind;
}

void err_clear(pgd_error *err)
{
    err->set = false;
    err->kind = PGD_ERR_FAILED;
    err->msg[0] = '\0';
}
