/*
 * sigv4.c - AWS Signature Version 4: canonical request, string to sign,
 * signing key and Authorization header (the S3 driver's signer).
 *
 * Character classes are ASCII on purpose, not <ctype.h>: a locale must never
 * change which bytes are percent-encoded or which count as white space.
 */
#define _GNU_SOURCE
#include "storage/s3/sigv4.h"

#include "util/digest.h"
#include "util/xmalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIGV4_KEY_LEN DIGEST_SHA256_LEN /* HMAC-SHA256 output */

static const char sigv4_hex_lower[] = "0123456789abcdef";
static const char sigv4_hex_upper[] = "0123456789ABCDEF";

static void sigv4_to_hex(const unsigned char *in, size_t len, char *out)
{
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = sigv4_hex_lower[in[i] >> 4];
        out[2 * i + 1] = sigv4_hex_lower[in[i] & 15];
    }
    out[2 * len] = '\0';
}

bool sigv4_sha256_hex(const void *data, size_t len, char out[SIGV4_HEX_LEN + 1])
{
    unsigned char md[DIGEST_SHA256_LEN];
    bool ok = digest_sha256(data, len, md);

    sigv4_to_hex(md, sizeof(md), out);
    return ok;
}

/* RFC 3986 unreserved: A-Z a-z 0-9 - _ . ~ */
static bool sigv4_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

static bool sigv4_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int sigv4_hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *sigv4_uri_encode(const char *s, bool keep_slash)
{
    char *out = xmalloc(strlen(s) * 3 + 1), *p = out;

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (sigv4_unreserved(c) || (keep_slash && c == '/')) {
            *p++ = (char)c;
        } else {
            *p++ = '%';
            *p++ = sigv4_hex_upper[c >> 4];
            *p++ = sigv4_hex_upper[c & 15];
        }
    }
    *p = '\0';
    return out;
}

/* "%41" -> "A" (query strings arrive encoded; they are decoded, then encoded canonically). */
static char *sigv4_uri_decode(const char *s, size_t len)
{
    char *out = xmalloc(len + 1), *p = out;

    for (size_t i = 0; i < len; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < len && (hi = sigv4_hex_value((unsigned char)s[i + 1])) >= 0 &&
            (lo = sigv4_hex_value((unsigned char)s[i + 2])) >= 0) {
            *p++ = (char)(hi << 4 | lo);
            i += 2;
        } else {
            *p++ = s[i];
        }
    }
    *p = '\0';
    return out;
}

/* Non-S3 paths: remove "." and ".." segments and empty segments (RFC 3986 5.2.4). */
static char *sigv4_normalize_path(const char *path)
{
    size_t len = strlen(path);
    char **segs = xcalloc(len + 1, sizeof(char *)), *copy = xstrdup(path), *out = xmalloc(len + 2),
         *save = NULL;
    size_t n = 0;
    bool trailing = len > 1 && path[len - 1] == '/';

    for (char *seg = strtok_r(copy, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
        if (strcmp(seg, ".") == 0)
            continue;
        if (strcmp(seg, "..") == 0) {
            if (n > 0)
                n--;
            continue;
        }
        segs[n++] = seg;
    }
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strcat(out, "/");
        strcat(out, segs[i]);
    }
    if (n == 0 || trailing)
        strcat(out, "/");
    free(segs);
    free(copy);
    return out;
}

typedef struct sigv4_pair {
    char *k, *v;
} sigv4_pair;

static int sigv4_pair_cmp(const void *a, const void *b)
{
    const sigv4_pair *x = a, *y = b;
    int c = strcmp(x->k, y->k);

    return c ? c : strcmp(x->v, y->v);
}

static void sigv4_pairs_free(sigv4_pair *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(items[i].k);
        free(items[i].v);
    }
    free(items);
}

/* Decode each name and value, encode them canonically, sort by name then value. */
static char *sigv4_canonical_query(const char *query)
{
    size_t n = 0, pairs = 1;
    sigv4_pair *items;
    const char *p = query;
    char *out = NULL;
    size_t outlen;
    FILE *f;

    if (query == NULL || *query == '\0')
        return xstrdup("");
    for (const char *c = query; *c; c++)
        pairs += *c == '&';
    items = xcalloc(pairs, sizeof(*items));
    while (*p) {
        size_t len = strcspn(p, "&");
        const char *eq = memchr(p, '=', len);
        char *k = sigv4_uri_decode(p, eq ? (size_t)(eq - p) : len);
        char *v = eq ? sigv4_uri_decode(eq + 1, len - (size_t)(eq - p) - 1) : xstrdup("");
        items[n].k = sigv4_uri_encode(k, false);
        items[n].v = sigv4_uri_encode(v, false);
        n++;
        free(k);
        free(v);
        p += len;
        if (*p == '&')
            p++;
    }
    qsort(items, n, sizeof(*items), sigv4_pair_cmp);
    f = open_memstream(&out, &outlen);
    if (f != NULL) {
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%s=%s", i ? "&" : "", items[i].k, items[i].v);
        if (fclose(f) != 0) {
            free(out);
            out = NULL;
        }
    }
    sigv4_pairs_free(items, n);
    return out;
}

/* Trim, and fold runs of white space into one space. */
static char *sigv4_fold_value(const char *v)
{
    char *out = xmalloc(strlen(v) + 1), *p = out;
    bool space = false;

    while (sigv4_space((unsigned char)*v))
        v++;
    for (; *v; v++) {
        if (sigv4_space((unsigned char)*v)) {
            space = true;
            continue;
        }
        if (space && p != out)
            *p++ = ' ';
        space = false;
        *p++ = *v;
    }
    *p = '\0';
    return out;
}

/* Lower-case names, folded values; a repeated header's values joined with ',' in order. */
static sigv4_pair *sigv4_canonical_headers(const sigv4_request *r, size_t *count)
{
    sigv4_pair *h = xcalloc(r->nheaders ? r->nheaders : 1, sizeof(*h));
    size_t n = 0;

    for (size_t i = 0; i < r->nheaders; i++) {
        char *name = xstrdup(r->headers[i].name), *value = sigv4_fold_value(r->headers[i].value);
        size_t k;
        for (char *c = name; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        for (k = 0; k < n && strcmp(h[k].k, name) != 0; k++)
            ;
        if (k < n) {
            char *joined = xasprintf("%s,%s", h[k].v, value);
            free(name);
            free(value);
            free(h[k].v);
            h[k].v = joined;
        } else {
            h[n].k = name;
            h[n].v = value;
            n++;
        }
    }
    qsort(h, n, sizeof(*h), sigv4_pair_cmp);
    *count = n;
    return h;
}

char *sigv4_canonical_request(const sigv4_request *r, char **signed_headers)
{
    size_t n = 0, len;
    sigv4_pair *h = sigv4_canonical_headers(r, &n);
    char *path = NULL, *uri = NULL, *query = NULL, *out = NULL;
    FILE *f;

    if (signed_headers != NULL)
        *signed_headers = NULL;
    /* S3 signs its path as sent (encoded once by the caller); others encode here */
    if (r->s3) {
        uri = xstrdup(r->path);
    } else {
        path = sigv4_normalize_path(r->path);
        uri = sigv4_uri_encode(path, true);
    }
    query = sigv4_canonical_query(r->query);
    /* open_memstream allocates with the C library's own malloc: its failures are checked */
    f = query ? open_memstream(&out, &len) : NULL;
    if (f != NULL) {
        fprintf(f, "%s\n%s\n%s\n", r->method, uri, query);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s:%s\n", h[i].k, h[i].v);
        fputc('\n', f);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%s", i ? ";" : "", h[i].k);
        fprintf(f, "\n%s", r->payload_hash);
        if (fclose(f) != 0) {
            free(out);
            out = NULL;
        }
    }
    if (out != NULL && signed_headers != NULL) {
        /* the signed list is the canonical request's second-to-last line */
        const char *end = strrchr(out, '\n'), *start = end;
        while (start > out && start[-1] != '\n')
            start--;
        *signed_headers = xstrndup(start, (size_t)(end - start));
    }
    sigv4_pairs_free(h, n);
    free(path);
    free(uri);
    free(query);
    return out;
}

static void sigv4_scope(const char *amz_date, const sigv4_credentials *c, char *out, size_t len)
{
    snprintf(out, len, "%.8s/%s/%s/aws4_request", amz_date, c->region, c->service);
}

char *sigv4_string_to_sign(const char *amz_date, const sigv4_credentials *c, const char *creq)
{
    char hash[SIGV4_HEX_LEN + 1], sc[256];

    if (!sigv4_sha256_hex(creq, strlen(creq), hash))
        return NULL;
    sigv4_scope(amz_date, c, sc, sizeof(sc));
    return xasprintf("AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, sc, hash);
}

static bool sigv4_hmac(const void *key, size_t klen, const char *msg,
                       unsigned char out[SIGV4_KEY_LEN])
{
    return digest_hmac_sha256(key, klen, msg, strlen(msg), out);
}

bool sigv4_signature(const sigv4_credentials *c, const char *amz_date, const char *sts,
                     char out[SIGV4_HEX_LEN + 1])
{
    unsigned char k_date[SIGV4_KEY_LEN], k_region[SIGV4_KEY_LEN], k_service[SIGV4_KEY_LEN],
        k_signing[SIGV4_KEY_LEN], sig[SIGV4_KEY_LEN];
    char date[9], *secret;
    bool ok;

    out[0] = '\0';
    snprintf(date, sizeof(date), "%.8s", amz_date);
    secret = xasprintf("AWS4%s", c->secret_key);
    ok = sigv4_hmac(secret, strlen(secret), date, k_date);
    explicit_bzero(secret, strlen(secret));
    free(secret);
    ok = ok && sigv4_hmac(k_date, SIGV4_KEY_LEN, c->region, k_region) &&
         sigv4_hmac(k_region, SIGV4_KEY_LEN, c->service, k_service) &&
         sigv4_hmac(k_service, SIGV4_KEY_LEN, "aws4_request", k_signing) &&
         sigv4_hmac(k_signing, SIGV4_KEY_LEN, sts, sig);
    explicit_bzero(k_date, sizeof(k_date));
    explicit_bzero(k_region, sizeof(k_region));
    explicit_bzero(k_service, sizeof(k_service));
    explicit_bzero(k_signing, sizeof(k_signing));
    if (ok)
        sigv4_to_hex(sig, SIGV4_KEY_LEN, out);
    return ok;
}

char *sigv4_authorization(const sigv4_request *r, const sigv4_credentials *c, const char *amz_date)
{
    char *signed_headers = NULL, *creq = sigv4_canonical_request(r, &signed_headers), *sts, *out;
    char sig[SIGV4_HEX_LEN + 1], sc[256];

    if (creq == NULL) {
        free(signed_headers);
        return NULL;
    }
    sts = sigv4_string_to_sign(amz_date, c, creq);
    free(creq);
    if (sts == NULL) {
        free(signed_headers);
        return NULL;
    }
    sigv4_scope(amz_date, c, sc, sizeof(sc));
    out = sigv4_signature(c, amz_date, sts, sig)
              ? xasprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                          c->access_key, sc, signed_headers, sig)
              : NULL;
    free(sts);
    free(signed_headers);
    return out;
}
