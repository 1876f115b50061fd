/*
 * sigv4.c - AWS Signature Version 4.
 */
#define _GNU_SOURCE
#include "storage/sigv4.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hexdigits[] = "0123456789abcdef";

static void to_hex(const unsigned char *in, size_t len, char *out)
{
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hexdigits[in[i] >> 4];
        out[2 * i + 1] = hexdigits[in[i] & 15];
    }
    out[2 * len] = '\0';
}

void sigv4_sha256_hex(const void *data, size_t len, char out[SIGV4_HEX_LEN + 1])
{
    unsigned char md[SHA256_DIGEST_LENGTH];

    SHA256(data, len, md);
    to_hex(md, sizeof(md), out);
}

char *sigv4_uri_encode(const char *s, bool keep_slash)
{
    char *out = malloc(strlen(s) * 3 + 1), *p = out;

    if (out == NULL)
        return NULL;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
            (keep_slash && c == '/')) {
            *p++ = (char)c;
        } else {
            *p++ = '%';
            *p++ = "0123456789ABCDEF"[c >> 4];
            *p++ = "0123456789ABCDEF"[c & 15];
        }
    }
    *p = '\0';
    return out;
}

/* "%41" -> "A" (query strings arrive encoded; they are decoded, then encoded canonically). */
static char *uri_decode(const char *s, size_t len)
{
    char *out = malloc(len + 1), *p = out;

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%' && i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
            isxdigit((unsigned char)s[i + 2])) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            *p++ = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            *p++ = s[i];
        }
    }
    *p = '\0';
    return out;
}

/* Non-S3 paths: remove "." and ".." segments and empty segments (RFC 3986 5.2.4). */
static char *normalize_path(const char *path)
{
    size_t len = strlen(path);
    char **segs = calloc(len + 1, sizeof(char *)), *copy = strdup(path), *out, *save = NULL;
    size_t n = 0;
    bool trailing = len > 1 && path[len - 1] == '/';

    if (segs == NULL || copy == NULL || (out = malloc(len + 2)) == NULL) {
        free(segs);
        free(copy);
        return NULL;
    }
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

typedef struct kv {
    char *k, *v;
} kv;

static int kv_cmp(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    int c = strcmp(x->k, y->k);

    return c ? c : strcmp(x->v, y->v);
}

static char *canonical_query(const char *query)
{
    size_t cap = 16, n = 0, total = 1;
    kv *items;
    const char *p = query;
    char *out;

    if (query == NULL || *query == '\0')
        return strdup("");
    items = calloc(cap, sizeof(*items));
    while (items != NULL && *p) {
        size_t len = strcspn(p, "&");
        const char *eq = memchr(p, '=', len);
        char *k = uri_decode(p, eq ? (size_t)(eq - p) : len);
        char *v = eq ? uri_decode(eq + 1, len - (size_t)(eq - p) - 1) : strdup("");
        if (n == cap) {
            cap *= 2;
            items = realloc(items, cap * sizeof(*items));
        }
        items[n].k = sigv4_uri_encode(k, false);
        items[n].v = sigv4_uri_encode(v, false);
        total += strlen(items[n].k) + strlen(items[n].v) + 2;
        n++;
        free(k);
        free(v);
        p += len;
        if (*p == '&')
            p++;
    }
    if (items == NULL)
        return NULL;
    qsort(items, n, sizeof(*items), kv_cmp);
    out = malloc(total);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(out, "&");
        strcat(out, items[i].k);
        strcat(out, "=");
        strcat(out, items[i].v);
        free(items[i].k);
        free(items[i].v);
    }
    free(items);
    return out;
}

typedef struct hdr {
    char *name;  /* lower case */
    char *value; /* trimmed, inner spaces folded; duplicates joined with ',' */
} hdr;

static int hdr_cmp(const void *a, const void *b)
{
    return strcmp(((const hdr *)a)->name, ((const hdr *)b)->name);
}

/* Trim, and fold runs of white space into one space. */
static char *fold_value(const char *v)
{
    char *out = malloc(strlen(v) + 1), *p = out;
    bool space = false;

    if (out == NULL)
        return NULL;
    while (isspace((unsigned char)*v))
        v++;
    for (; *v; v++) {
        if (isspace((unsigned char)*v)) {
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

char *sigv4_canonical_request(const sigv4_request *r, char **signed_headers)
{
    hdr *h = calloc(r->nheaders ? r->nheaders : 1, sizeof(*h));
    size_t n = 0, len;
    char *path, *uri, *query, *headers, *signed_list, *out = NULL;

    if (h == NULL)
        return NULL;
    for (size_t i = 0; i < r->nheaders; i++) {
        char *name = strdup(r->headers[i].name), *value = fold_value(r->headers[i].value);
        size_t k;
        for (char *c = name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        for (k = 0; k < n && strcmp(h[k].name, name) != 0; k++)
            ;
        if (k < n) { /* repeated header: values joined with ',' in order */
            char *joined;
            if (asprintf(&joined, "%s,%s", h[k].value, value) < 0)
                joined = NULL;
            free(h[k].value);
            h[k].value = joined;
            free(name);
            free(value);
        } else {
            h[n].name = name;
            h[n].value = value;
            n++;
        }
    }
    qsort(h, n, sizeof(*h), hdr_cmp);
    len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(h[i].name) + strlen(h[i].value) + 2;
    headers = malloc(len);
    signed_list = malloc(len);
    headers[0] = signed_list[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strcat(headers, h[i].name);
        strcat(headers, ":");
        strcat(headers, h[i].value);
        strcat(headers, "\n");
        if (i)
            strcat(signed_list, ";");
        strcat(signed_list, h[i].name);
        free(h[i].name);
        free(h[i].value);
    }
    free(h);
    path = r->s3 ? strdup(r->path) : normalize_path(r->path);
    uri = path ? sigv4_uri_encode(path, true) : NULL;
    query = canonical_query(r->query);
    if (uri != NULL && query != NULL &&
        asprintf(&out, "%s\n%s\n%s\n%s\n%s\n%s", r->method, uri, query, headers, signed_list,
                 r->payload_hash) < 0)
        out = NULL;
    free(path);
    free(uri);
    free(query);
    free(headers);
    if (signed_headers != NULL)
        *signed_headers = signed_list;
    else
        free(signed_list);
    return out;
}

static void scope(const char *amz_date, const sigv4_credentials *c, char *out, size_t len)
{
    snprintf(out, len, "%.8s/%s/%s/aws4_request", amz_date, c->region, c->service);
}

char *sigv4_string_to_sign(const char *amz_date, const sigv4_credentials *c, const char *creq)
{
    char hash[SIGV4_HEX_LEN + 1], sc[256], *out;

    sigv4_sha256_hex(creq, strlen(creq), hash);
    scope(amz_date, c, sc, sizeof(sc));
    if (asprintf(&out, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, sc, hash) < 0)
        return NULL;
    return out;
}

static void hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
    unsigned int len = 32;

    HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &len);
}

void sigv4_signature(const sigv4_credentials *c, const char *amz_date, const char *sts,
                     char out[SIGV4_HEX_LEN + 1])
{
    unsigned char k_date[32], k_region[32], k_service[32], k_signing[32], sig[32];
    char date[9], *secret;

    snprintf(date, sizeof(date), "%.8s", amz_date);
    if (asprintf(&secret, "AWS4%s", c->secret_key) < 0) {
        out[0] = '\0';
        return;
    }
    hmac(secret, strlen(secret), date, k_date);
    OPENSSL_cleanse(secret, strlen(secret));
    free(secret);
    hmac(k_date, 32, c->region, k_region);
    hmac(k_region, 32, c->service, k_service);
    hmac(k_service, 32, "aws4_request", k_signing);
    hmac(k_signing, 32, sts, sig);
    to_hex(sig, 32, out);
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
    sigv4_signature(c, amz_date, sts, sig);
    scope(amz_date, c, sc, sizeof(sc));
    if (asprintf(&out, "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                 c->access_key, sc, signed_headers, sig) < 0)
        out = NULL;
    free(creq);
    free(sts);
    free(signed_headers);
    return out;
}
