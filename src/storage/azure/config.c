/*
 * config.c - the Azure driver's configuration: the azure:// URI, the
 * connection string, the endpoint, the credentials, and the storage object
 * they make.
 *
 * Credentials are looked for where Azure's own tools look: a connection
 * string (AZURE_STORAGE_CONNECTION_STRING) first, else AZURE_STORAGE_ACCOUNT
 * with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN. No message ever
 * carries the key, the SAS token or the connection string that holds them.
 */
#define _GNU_SOURCE
#include "storage/azure/internal.h"
#include "storage/http/http_libs.h"
#include "util/xmalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AZURE_ENDPOINT_ECHO 256

/* ---- the azure:// URI ---- */

static bool azure_config_container_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

bool azure_config_parse_uri(const char *uri, char **container, char **prefix, pgd_error *err)
{
    const char *rest, *slash;
    size_t clen;

    *container = *prefix = NULL;
    if (!storage_uri_is_azure(uri))
        return err_set(err, "invalid repository \"%s\": expected azure://container/prefix", uri);
    rest = uri + strlen(STORAGE_AZURE_SCHEME);
    slash = strchr(rest, '/');
    clen = slash ? (size_t)(slash - rest) : strlen(rest);
    if (clen < AZURE_CONTAINER_MIN || clen > AZURE_CONTAINER_MAX)
        return err_set(err,
                       "invalid repository \"%s\": expected azure://container/prefix with a "
                       "container name of %d to %d characters",
                       uri, AZURE_CONTAINER_MIN, AZURE_CONTAINER_MAX);
    for (size_t i = 0; i < clen; i++)
        if (!azure_config_container_char(rest[i]))
            return err_set(err,
                           "invalid repository \"%s\": container names hold lower-case letters, "
                           "digits and '-'",
                           uri);
    if (rest[0] == '-' || rest[clen - 1] == '-' || memmem(rest, clen, "--", 2) != NULL)
        return err_set(err,
                       "invalid repository \"%s\": a container name starts and ends with a "
                       "letter or digit and has no \"--\"",
                       uri);
    if (!storage_uri_prefix(uri, slash, prefix, err))
        return false;
    *container = xstrndup(rest, clen);
    return true;
}

/* ---- the connection string ---- */

void azure_config_conn_free(azure_conn *c)
{
    if (c->key != NULL)
        explicit_bzero(c->key, strlen(c->key));
    if (c->sas != NULL)
        explicit_bzero(c->sas, strlen(c->sas));
    free(c->account);
    free(c->key);
    free(c->sas);
    free(c->blob_endpoint);
    free(c->protocol);
    free(c->suffix);
    memset(c, 0, sizeof(*c));
}

static char **azure_config_conn_field(azure_conn *c, const char *name, size_t len)
{
    static const struct {
        const char *name;
        size_t offset;
    } fields[] = {
        {"AccountName", offsetof(azure_conn, account)},
        {"AccountKey", offsetof(azure_conn, key)},
        {"SharedAccessSignature", offsetof(azure_conn, sas)},
        {"BlobEndpoint", offsetof(azure_conn, blob_endpoint)},
        {"DefaultEndpointsProtocol", offsetof(azure_conn, protocol)},
        {"EndpointSuffix", offsetof(azure_conn, suffix)},
    };

    for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
        if (strlen(fields[i].name) == len && strncasecmp(fields[i].name, name, len) == 0)
            return (char **)((char *)c + fields[i].offset);
    return NULL;
}

bool azure_config_parse_connection_string(const char *text, azure_conn *out, pgd_error *err)
{
    const char *p = text;
    unsigned part = 0;

    memset(out, 0, sizeof(*out));
    while (*p != '\0') {
        size_t len = strcspn(p, ";");
        const char *eq = memchr(p, '=', len);
        char **field;

        part++;
        if (len == 0) { /* ";;" or a trailing ';' */
            p++;
            continue;
        }
        if (eq == NULL || eq == p) {
            azure_config_conn_free(out);
            /* the string holds a key: say where, never what */
            return err_set(
                err, "invalid AZURE_STORAGE_CONNECTION_STRING: part %u is not Name=value", part);
        }
        field = azure_config_conn_field(out, p, (size_t)(eq - p));
        if (field != NULL) {
            free(*field);
            *field = xstrndup(eq + 1, len - (size_t)(eq - p) - 1);
        }
        p += len;
        if (*p == ';')
            p++;
    }
    return true;
}

/* ---- the endpoint ---- */

/* "http(s)://host[:port][/path]", without credentials, query or fragment; trailing '/' dropped. */
static bool azure_config_endpoint(const char *endpoint, char **url, char **path, pgd_error *err)
{
    char echo[AZURE_ENDPOINT_ECHO];
    const char *auth, *rest;
    size_t alen, len;

    /* a query may carry a SAS token (sig=...): never echoed */
    snprintf(echo, sizeof(echo), "%.*s", (int)strcspn(endpoint, "?#"), endpoint);
    for (char *c = echo; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    if (strncasecmp(endpoint, "http://", 7) == 0)
        auth = endpoint + 7;
    else if (strncasecmp(endpoint, "https://", 8) == 0)
        auth = endpoint + 8;
    else
        return err_set(err, "invalid Azure endpoint \"%s\": expected http(s)://host[:port][/path]",
                       echo);
    alen = strcspn(auth, "/?#");
    if (memchr(auth, '@', alen) != NULL)
        return err_set(err, "invalid Azure endpoint: credentials do not belong in the URL; use "
                            "AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN");
    if (alen == 0 || auth[0] == ':')
        return err_set(err, "invalid Azure endpoint \"%s\": no host", echo);
    for (size_t i = 0; i < alen; i++)
        if (!((auth[i] >= 'a' && auth[i] <= 'z') || (auth[i] >= 'A' && auth[i] <= 'Z') ||
              (auth[i] >= '0' && auth[i] <= '9') || strchr("-._:[]", auth[i]) != NULL))
            return err_set(err, "invalid Azure endpoint \"%s\": the host holds '%c'", echo,
                           auth[i] >= 0x20 && auth[i] != 0x7f ? auth[i] : '?');
    rest = auth + alen;
    if (strpbrk(rest, "?#") != NULL)
        return err_set(err,
                       "invalid Azure endpoint \"%s\": expected no query or fragment (not shown: "
                       "give a SAS token in AZURE_STORAGE_SAS_TOKEN)",
                       echo);
    for (const char *c = rest; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f || *c == '%')
            return err_set(err, "invalid Azure endpoint \"%s\": the path holds '%c'", echo,
                           *c > 0x20 && *c != 0x7f ? *c : '?');
    len = strlen(endpoint);
    while (len > (size_t)(rest - endpoint) && endpoint[len - 1] == '/')
        len--;
    *url = xstrndup(endpoint, len);
    *path = xstrndup(rest, len - (size_t)(rest - endpoint));
    return true;
}

/* ---- the storage ---- */

static void azure_config_free(storage *st)
{
    azure_storage *s = (azure_storage *)st;

    http_pool_free(&s->pool);
    free(s->container);
    free(s->prefix);
    free(s->endpoint);
    free(s->endpoint_path);
    free(s->account);
    explicit_bzero(s->key, sizeof(s->key));
    if (s->sas != NULL) {
        explicit_bzero(s->sas, strlen(s->sas));
        free(s->sas);
    }
    free(s->base.uri);
    free(s);
}

static const storage_ops azure_config_ops = {
    .write_open = azure_writer_open,
    .read_open = azure_reader_open,
    .exists = azure_reader_exists,
    .list = azure_listing_list,
    .remove = azure_listing_remove,
    .free = azure_config_free,
};

static const char *azure_config_env(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* Account, key or SAS, and the endpoint a connection string gives, from conn or the variables. */
static bool azure_config_credentials(azure_storage *s, const azure_conn *conn, pgd_error *err)
{
    const char *account = conn->account ? conn->account : azure_config_env("AZURE_STORAGE_ACCOUNT");
    const char *key = conn->account ? conn->key : azure_config_env("AZURE_STORAGE_KEY");
    const char *sas =
        conn->account || conn->sas ? conn->sas : azure_config_env("AZURE_STORAGE_SAS_TOKEN");

    if (account == NULL && (sas == NULL || sas[0] == '\0'))
        return err_set(err,
                       "no account for %s: set AZURE_STORAGE_ACCOUNT (with AZURE_STORAGE_KEY or "
                       "AZURE_STORAGE_SAS_TOKEN), or AZURE_STORAGE_CONNECTION_STRING",
                       s->base.uri);
    s->account = account ? xstrdup(account) : NULL;
    if (key != NULL && key[0] != '\0' && account != NULL) {
        if (!azure_sign_base64_decode(key, s->key, sizeof(s->key), &s->key_len) || s->key_len == 0)
            return err_set(
                err, "the account key of %s (%s) is not base64 of at most %d bytes", s->base.uri,
                conn->key ? "AccountKey in AZURE_STORAGE_CONNECTION_STRING" : "AZURE_STORAGE_KEY",
                AZURE_KEY_MAX);
    } else if (sas != NULL && sas[0] != '\0') {
        s->sas = xstrdup(sas[0] == '?' ? sas + 1 : sas);
    } else {
        return err_set(err,
                       "no credentials for %s: set AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN "
                       "(or AccountKey or SharedAccessSignature in "
                       "AZURE_STORAGE_CONNECTION_STRING)",
                       s->base.uri);
    }
    return true;
}

static void azure_config_settings(azure_storage *s, const azure_options *o)
{
    s->block_size = o->block_size ? o->block_size : AZURE_BLOCK_DEFAULT;
    s->upload_concurrency = o->upload_concurrency ? o->upload_concurrency : AZURE_UPLOADS_DEFAULT;
    s->retries = o->retries == AZURE_OPTIONS_NO_RETRIES ? 0
                 : o->retries                           ? o->retries
                                                        : AZURE_RETRIES_DEFAULT;
    s->timeout_s = o->timeout_s ? o->timeout_s : AZURE_TIMEOUT_DEFAULT;
    s->list_page = AZURE_LIST_PAGE_DEFAULT;
    s->base.stream_memory = (uint64_t)(s->upload_concurrency + 1) * s->block_size;
}

storage *azure_storage_open(const char *uri, const azure_options *o, pgd_error *err)
{
    static const azure_options defaults = {0};
    azure_storage *s;
    azure_conn conn = {0};
    const char *cs = azure_config_env("AZURE_STORAGE_CONNECTION_STRING");
    char *default_endpoint = NULL;
    const char *endpoint;

    if (o == NULL)
        o = &defaults;
    /* from the main thread, before any thread makes a request */
    if (!http_libs_load(err))
        return NULL;
    s = xcalloc(1, sizeof(*s));
    s->base.ops = &azure_config_ops;
    http_pool_init(&s->pool);
    if (!azure_config_parse_uri(uri, &s->container, &s->prefix, err))
        goto fail;
    s->base.uri = xasprintf("azure://%s%s%s", s->container, s->prefix[0] ? "/" : "", s->prefix);
    azure_config_settings(s, o);
    if (s->block_size < AZURE_BLOCK_MIN || s->block_size > AZURE_BLOCK_MAX) {
        err_set(err, "block size %llu (--s3-part-size) for %s is outside Azure's 1 MiB to 4000 MiB",
                (unsigned long long)s->block_size, s->base.uri);
        goto fail;
    }
    if (cs != NULL && !azure_config_parse_connection_string(cs, &conn, err))
        goto fail;
    if (!azure_config_credentials(s, &conn, err))
        goto fail;
    endpoint = o->endpoint && o->endpoint[0] ? o->endpoint : conn.blob_endpoint;
    if ((endpoint == NULL || endpoint[0] == '\0') && s->account == NULL) {
        err_set(err,
                "no endpoint for %s: give --azure-endpoint, or BlobEndpoint or AccountName "
                "in AZURE_STORAGE_CONNECTION_STRING",
                s->base.uri);
        goto fail;
    }
    if (endpoint == NULL || endpoint[0] == '\0') {
        default_endpoint = xasprintf("%s://%s.blob.%s", conn.protocol ? conn.protocol : "https",
                                     s->account, conn.suffix ? conn.suffix : AZURE_DEFAULT_SUFFIX);
        endpoint = default_endpoint;
    }
    if (!azure_config_endpoint(endpoint, &s->endpoint, &s->endpoint_path, err))
        goto fail;
    free(default_endpoint);
    azure_config_conn_free(&conn);
    return &s->base;
fail:
    /* the URI, the settings, the credentials or the endpoint: wrong before anything was sent */
    err_mark(err, PGD_ERR_USAGE);
    free(default_endpoint);
    azure_config_conn_free(&conn);
    azure_config_free(&s->base);
    return NULL;
}

bool azure_storage_where(const storage *repo, const char **endpoint_url)
{
    const azure_storage *s = (const azure_storage *)repo;

    if (repo->ops != &azure_config_ops)
        return false;
    *endpoint_url = s->endpoint;
    return true;
}
