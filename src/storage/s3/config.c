/*
 * config.c - the S3 driver's configuration: the s3:// URI, the endpoint URL,
 * credentials and settings, and the storage object they make.
 *
 * An endpoint URL is checked before anything else is done with it, and it is
 * only ever echoed with any user:password part masked: a message must never
 * carry a credential.
 */
#define _GNU_SOURCE
#include "storage/s3/internal.h"
#include "storage/http/http_libs.h"
#include "util/xmalloc.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S3_PORT_MAX      65535
#define S3_ENDPOINT_ECHO 256 /* an endpoint is echoed at most this long */

/* ---- the s3:// URI ---- */

static bool s3_config_bucket_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static bool s3_config_bucket_edge(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool s3_config_parse_uri(const char *uri, char **bucket, char **prefix, pgd_error *err)
{
    const char *rest, *slash;
    size_t blen;

    *bucket = *prefix = NULL;
    if (!storage_uri_is_s3(uri))
        return err_set(err, "invalid repository \"%s\": expected s3://bucket/prefix", uri);
    rest = uri + strlen(STORAGE_S3_SCHEME);
    slash = strchr(rest, '/');
    blen = slash ? (size_t)(slash - rest) : strlen(rest);
    if (blen < S3_BUCKET_MIN || blen > S3_BUCKET_MAX)
        return err_set(err,
                       "invalid repository \"%s\": expected s3://bucket/prefix with a bucket name "
                       "of %d to %d characters",
                       uri, S3_BUCKET_MIN, S3_BUCKET_MAX);
    for (size_t i = 0; i < blen; i++)
        if (!s3_config_bucket_char(rest[i]))
            return err_set(err,
                           "invalid repository \"%s\": bucket names hold lower-case letters, "
                           "digits, '-' and '.'",
                           uri);
    if (!s3_config_bucket_edge(rest[0]) || !s3_config_bucket_edge(rest[blen - 1]) ||
        memmem(rest, blen, "..", 2) != NULL)
        return err_set(err,
                       "invalid repository \"%s\": a bucket name starts and ends with a letter "
                       "or digit and has no \"..\"",
                       uri);
    if (!storage_uri_prefix(uri, slash, prefix, err))
        return false;
    *bucket = xstrndup(rest, blen);
    return true;
}

/* ---- the endpoint ---- */

/* The endpoint for messages: any "user:password@" replaced by "***@", and cut. */
static void s3_config_endpoint_echo(const char *endpoint, char *out, size_t outlen)
{
    const char *sep = strstr(endpoint, "://");
    const char *auth = sep ? sep + 3 : endpoint;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;

    for (const char *c = auth; c < auth + alen; c++)
        if (*c == '@')
            at = c;
    if (at != NULL)
        snprintf(out, outlen, "%.*s***%s", (int)(auth - endpoint), endpoint, at);
    else
        snprintf(out, outlen, "%s", endpoint);
    /* no control characters in a message */
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

static bool s3_config_host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_';
}

/* host ("[v6]" or a name or v4 address) and port out of "host[:port]"; *is_ip when an address. */
static bool s3_config_split_authority(const char *auth, size_t alen, const char *echo,
                                      size_t *hostlen, bool *is_ip, pgd_error *err)
{
    const char *port = NULL;
    char hostbuf[S3_ENDPOINT_ECHO];

    *is_ip = false;
    if (alen > 0 && auth[0] == '[') {
        const char *close = memchr(auth, ']', alen);
        struct in6_addr a6;
        if (close == NULL || (size_t)(close - auth) - 1 >= sizeof(hostbuf))
            return err_set(err, "invalid S3 endpoint \"%s\": unterminated IPv6 address", echo);
        snprintf(hostbuf, sizeof(hostbuf), "%.*s", (int)(close - auth - 1), auth + 1);
        if (inet_pton(AF_INET6, hostbuf, &a6) != 1)
            return err_set(err, "invalid S3 endpoint \"%s\": \"%s\" is not an IPv6 address", echo,
                           hostbuf);
        *is_ip = true;
        *hostlen = (size_t)(close - auth) + 1;
        if (*hostlen < alen && auth[*hostlen] != ':')
            return err_set(err, "invalid S3 endpoint \"%s\": expected a port after the address",
                           echo);
    } else {
        struct in_addr a4;
        *hostlen = strcspn(auth, ":");
        if (*hostlen > alen)
            *hostlen = alen;
        for (size_t i = 0; i < *hostlen; i++)
            if (!s3_config_host_char(auth[i]))
                return err_set(err, "invalid S3 endpoint \"%s\": the host name holds '%c'", echo,
                               auth[i] >= 0x20 && auth[i] != 0x7f ? auth[i] : '?');
        if (*hostlen >= sizeof(hostbuf))
            return err_set(err, "invalid S3 endpoint \"%s\": the host name is too long", echo);
        snprintf(hostbuf, sizeof(hostbuf), "%.*s", (int)*hostlen, auth);
        *is_ip = inet_pton(AF_INET, hostbuf, &a4) == 1;
    }
    if (*hostlen == 0 || (auth[0] == '[' && *hostlen == 2))
        return err_set(err, "invalid S3 endpoint \"%s\": no host", echo);
    if (*hostlen < alen) {
        char *end;
        unsigned long p;
        port = auth + *hostlen + 1;
        p = strtoul(port, &end, 10);
        if (port == auth + alen || end != auth + alen || *port == '-' || *port == '+' || p == 0 ||
            p > S3_PORT_MAX)
            return err_set(err, "invalid S3 endpoint \"%s\": the port must be 1 to %d", echo,
                           S3_PORT_MAX);
    }
    return true;
}

bool s3_config_parse_endpoint(const char *endpoint, bool host_style, const char *bucket,
                              s3_endpoint *out, pgd_error *err)
{
    char echo[S3_ENDPOINT_ECHO];
    const char *scheme, *auth, *rest;
    size_t alen, hostlen;
    bool is_ip;

    memset(out, 0, sizeof(*out));
    s3_config_endpoint_echo(endpoint, echo, sizeof(echo));
    if (strncasecmp(endpoint, "http://", 7) == 0)
        scheme = "http";
    else if (strncasecmp(endpoint, "https://", 8) == 0)
        scheme = "https";
    else
        return err_set(err,
                       "invalid S3 endpoint \"%s\": expected http://host[:port] or "
                       "https://host[:port]",
                       echo);
    auth = endpoint + strlen(scheme) + 3;
    alen = strcspn(auth, "/?#");
    if (memchr(auth, '@', alen) != NULL)
        return err_set(err,
                       "invalid S3 endpoint \"%s\": credentials do not belong in the URL; "
                       "use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                       echo);
    rest = auth + alen;
    if (!(rest[0] == '\0' || (rest[0] == '/' && rest[1] == '\0')))
        return err_set(err,
                       "invalid S3 endpoint \"%s\": expected no path, query or fragment after "
                       "host[:port]",
                       echo);
    if (!s3_config_split_authority(auth, alen, echo, &hostlen, &is_ip, err))
        return false;
    if (host_style && is_ip)
        return err_set(err,
                       "invalid S3 endpoint \"%s\": --s3-uri-style host puts the bucket in the "
                       "host name, which an IP address cannot take; use --s3-uri-style path",
                       echo);
    out->host = host_style ? xasprintf("%s.%.*s", bucket, (int)alen, auth) : xstrndup(auth, alen);
    out->scheme_host = xasprintf("%s://%s", scheme, out->host);
    return true;
}

void s3_config_endpoint_free(s3_endpoint *e)
{
    free(e->scheme_host);
    free(e->host);
    e->scheme_host = e->host = NULL;
}

/* ---- the storage ---- */

static void s3_config_free(storage *st)
{
    s3_storage *s = (s3_storage *)st;

    http_pool_free(&s->pool);
    pthread_mutex_destroy(&s->lock);
    free(s->bucket);
    free(s->prefix);
    s3_config_endpoint_free(&s->endpoint);
    free(s->endpoint_url);
    free(s->region);
    free(s->access_key);
    if (s->secret_key) {
        explicit_bzero(s->secret_key, strlen(s->secret_key));
        free(s->secret_key);
    }
    if (s->session_token) {
        explicit_bzero(s->session_token, strlen(s->session_token));
        free(s->session_token);
    }
    free(s->storage_class);
    free(s->sse);
    free(s->lock_mode);
    free(s->base.uri);
    free(s);
}

static const storage_ops s3_config_ops = {
    .write_open = s3_writer_open,
    .read_open = s3_reader_open,
    .exists = s3_reader_exists,
    .list = s3_listing_list,
    .remove = s3_listing_remove,
    .free = s3_config_free,
    .remove_many = s3_listing_remove_many,
    .remove_stale_temp = s3_uploads_remove_stale,
    .retained_until = s3_reader_retained_until,
};

static char *s3_config_dup_or_env(const char *v, const char *env)
{
    const char *e = v && v[0] ? v : getenv(env);

    return e && e[0] ? xstrdup(e) : NULL;
}

/* Settings with their defaults. */
static void s3_config_settings(s3_storage *s, const s3_options *o)
{
    s->region = s3_config_dup_or_env(o->region, "AWS_REGION");
    if (s->region == NULL)
        s->region = s3_config_dup_or_env(NULL, "AWS_DEFAULT_REGION");
    if (s->region == NULL)
        s->region = xstrdup(S3_REGION_DEFAULT);
    s->access_key = s3_config_dup_or_env(o->access_key, "AWS_ACCESS_KEY_ID");
    s->secret_key = s3_config_dup_or_env(o->secret_key, "AWS_SECRET_ACCESS_KEY");
    s->session_token = s3_config_dup_or_env(o->session_token, "AWS_SESSION_TOKEN");
    s->storage_class = o->storage_class ? xstrdup(o->storage_class) : NULL;
    s->sse = o->sse ? xstrdup(o->sse) : NULL;
    s->lock_mode = o->object_lock ? xstrdup(o->object_lock) : NULL;
    s->lock_seconds = o->lock_seconds;
    s->host_style = o->host_style;
    s->part_size = o->part_size ? o->part_size : S3_PART_DEFAULT;
    s->upload_concurrency = o->upload_concurrency ? o->upload_concurrency : S3_UPLOADS_DEFAULT;
    s->download_concurrency =
        o->download_concurrency ? o->download_concurrency : S3_DOWNLOADS_DEFAULT;
    s->retries = o->retries == S3_OPTIONS_NO_RETRIES ? 0
                 : o->retries                        ? o->retries
                                                     : S3_RETRIES_DEFAULT;
    s->timeout_s = o->timeout_s ? o->timeout_s : S3_TIMEOUT_DEFAULT;
    s->base.stream_memory = (uint64_t)(s->upload_concurrency + 1) * s->part_size;
}

storage *s3_storage_open(const char *uri, const s3_options *o, pgd_error *err)
{
    static const s3_options defaults = {0};
    s3_storage *s;
    const char *endpoint;
    char *aws_endpoint = NULL;
    bool ok;

    if (o == NULL)
        o = &defaults;
    /* from the main thread, before any thread makes a request (libxml2: when first needed) */
    if (!http_libs_load(err))
        return NULL;
    s = xcalloc(1, sizeof(*s));
    s->base.ops = &s3_config_ops;
    pthread_mutex_init(&s->lock, NULL);
    http_pool_init(&s->pool);
    if (!s3_config_parse_uri(uri, &s->bucket, &s->prefix, err))
        goto fail;
    s->base.uri = xasprintf("s3://%s%s%s", s->bucket, s->prefix[0] ? "/" : "", s->prefix);
    s3_config_settings(s, o);
    if (s->access_key == NULL || s->secret_key == NULL) {
        err_set(err,
                "no credentials for s3://%s: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY",
                s->bucket);
        goto fail;
    }
    if (s->part_size < S3_PART_MIN) {
        err_set(err, "--s3-part-size %llu is below S3's minimum of 5 MiB",
                (unsigned long long)s->part_size);
        goto fail;
    }
    endpoint = o->endpoint && o->endpoint[0] ? o->endpoint : getenv("AWS_ENDPOINT_URL");
    if (endpoint == NULL || endpoint[0] == '\0') {
        aws_endpoint = xasprintf("https://s3.%s.amazonaws.com", s->region);
        endpoint = aws_endpoint;
    }
    ok = s3_config_parse_endpoint(endpoint, s->host_style, s->bucket, &s->endpoint, err);
    s->endpoint_url = aws_endpoint != NULL ? aws_endpoint : xstrdup(endpoint);
    if (!ok)
        goto fail;
    return &s->base;
fail:
    s3_config_free(&s->base);
    return NULL;
}

bool s3_storage_where(const storage *repo, const char **endpoint_url, const char **region)
{
    const s3_storage *s = (const s3_storage *)repo;

    if (repo->ops != &s3_config_ops)
        return false;
    *endpoint_url = s->endpoint_url;
    *region = s->region;
    return true;
}

bool s3_storage_lock_config(storage *repo, s3_lock_config *out, pgd_error *err)
{
    s3_storage *s = (s3_storage *)repo;
    s3_answer a;
    s3_call call = {.method = "GET",
                    .what = "the bucket's Object Lock configuration",
                    .query = "object-lock",
                    .absent_code = "ObjectLockConfigurationNotFoundError"};
    pgd_error perr = {0};
    bool ok;

    memset(out, 0, sizeof(*out));
    if (repo->ops != &s3_config_ops)
        return err_set(err, "repository \"%s\" is not in S3: it has no Object Lock", repo->uri);
    if (!s3_request(s, &call, &a, err)) {
        s3_answer_free(&a);
        return false;
    }
    ok = a.missing || s3_xml_lock_config(a.http.body, a.http.body_len, out, &perr) ||
         err_set(err, "the Object Lock configuration of bucket \"%s\" is invalid: %s", s->bucket,
                 perr.msg);
    s3_answer_free(&a);
    return ok;
}
