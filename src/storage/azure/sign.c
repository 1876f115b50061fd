/*
 * sign.c - Azure's Shared Key authorisation: the string to sign of a Blob
 * service request (the layout of version 2015-02-21 and later: an empty
 * Content-Length for a body of 0 bytes), its HMAC-SHA-256 under the
 * account key, and the base64 and percent-encoding it needs.
 *
 * The resource signed is the URL's path exactly as sent (encoded), after
 * "/ACCOUNT": with Azurite's path-style URLs the account appears twice,
 * "/acct/acct/container/blob", as Azure's SDKs sign it. Query parameters
 * are signed decoded, one "\nname:value" line each, sorted by name.
 */
#define _GNU_SOURCE
#include "storage/azure/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/digest.h"
#include "util/xmalloc.h"

#define AZURE_SIGN_PARAMS_MAX 16

static const char azure_sign_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* the headers of the string to sign, in its order, after the verb */
static const char *const azure_sign_standard[] = {
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
};

char *azure_sign_base64(const unsigned char *data, size_t len)
{
    char *out = xmalloc((len + 2) / 3 * 4 + 1);
    size_t o = 0;

    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16;
        size_t have = len - i;

        if (have > 1)
            v |= (uint32_t)data[i + 1] << 8;
        if (have > 2)
            v |= data[i + 2];
        out[o++] = azure_sign_b64[v >> 18 & 63];
        out[o++] = azure_sign_b64[v >> 12 & 63];
        out[o++] = have > 1 ? azure_sign_b64[v >> 6 & 63] : '=';
        out[o++] = have > 2 ? azure_sign_b64[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

bool azure_sign_base64_decode(const char *text, unsigned char *out, size_t cap, size_t *len)
{
    size_t n = strlen(text), o = 0;

    *len = 0;
    if (n == 0 || n % 4 != 0)
        return false;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        size_t pad = 0;
        for (size_t j = 0; j < 4; j++) {
            const char *p = strchr(azure_sign_b64, text[i + j]);
            if (text[i + j] == '=') {
                if (i + 4 != n || j < 2)
                    return false; /* padding only at the end, at most two */
                pad++;
                v <<= 6;
            } else if (pad > 0 || p == NULL) {
                return false;
            } else {
                v = v << 6 | (uint32_t)(p - azure_sign_b64);
            }
        }
        for (size_t j = 0; j < 3 - pad; j++) {
            if (o == cap)
                return false;
            out[o++] = (unsigned char)(v >> (16 - 8 * j));
        }
    }
    *len = o;
    return true;
}

char *azure_sign_uri_encode(const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = xmalloc(strlen(s) * 3 + 1), *o = out;

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~' || (keep_slash && *p == '/')) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

static const char *azure_sign_header(const azure_sign_input *in, const char *name)
{
    for (const char *const *h = in->headers; h && h[0]; h += 2)
        if (strcmp(h[0], name) == 0)
            return h[1];
    return NULL;
}

static int azure_sign_cmp_pairs(const void *a, const void *b)
{
    return strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
}

/* pointers to the "name" of each pair of `pairs` whose name passes `want`, sorted by name */
static size_t azure_sign_sorted(const char *const *pairs, bool x_ms_only, const char *const **out,
                                size_t cap)
{
    size_t n = 0;

    for (const char *const *p = pairs; p && p[0] && n < cap; p += 2)
        if (!x_ms_only || strncmp(p[0], "x-ms-", 5) == 0)
            out[n++] = p;
    qsort(out, n, sizeof(*out), azure_sign_cmp_pairs);
    return n;
}

char *azure_sign_string(const azure_sign_input *in)
{
    const char *const *sorted[AZURE_SIGN_PARAMS_MAX * 2];
    char *text = NULL;
    size_t len = 0, n;
    FILE *f = open_memstream(&text, &len);

    if (f == NULL)
        return NULL;
    fprintf(f, "%s\n", in->method);
    for (size_t i = 0; i < sizeof(azure_sign_standard) / sizeof(*azure_sign_standard); i++) {
        const char *v = azure_sign_header(in, azure_sign_standard[i]);
        if (strcmp(azure_sign_standard[i], "content-length") == 0) {
            if (in->content_length > 0)
                fprintf(f, "%llu", (unsigned long long)in->content_length);
        } else if (v != NULL) {
            fputs(v, f);
        }
        fputc('\n', f);
    }
    n = azure_sign_sorted(in->headers, true, sorted, sizeof(sorted) / sizeof(*sorted));
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s:%s\n", sorted[i][0], sorted[i][1]);
    fprintf(f, "/%s%s", in->account, in->resource_path);
    n = azure_sign_sorted(in->params, false, sorted, sizeof(sorted) / sizeof(*sorted));
    for (size_t i = 0; i < n; i++)
        fprintf(f, "\n%s:%s", sorted[i][0], sorted[i][1]);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

char *azure_sign_authorization(const char *account, const unsigned char *key, size_t key_len,
                               const char *string_to_sign)
{
    unsigned char mac[DIGEST_SHA256_LEN];
    char *sig, *out;

    if (!digest_hmac_sha256(key, key_len, string_to_sign, strlen(string_to_sign), mac))
        return NULL;
    sig = azure_sign_base64(mac, sizeof(mac));
    out = xasprintf("SharedKey %s:%s", account, sig);
    free(sig);
    return out;
}
