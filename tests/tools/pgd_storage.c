/*
 * pgd_storage.c - test helper: one operation of the storage interface on a
 * repository, so integration tests can drive a back end (the S3 driver
 * against moto) without a PostgreSQL around it.
 *
 *   pgd-storage [--part-size BYTES] [--retries N] [--azure-endpoint URL] [--list-page N]
 *               URI put PATH [no-replace] < DATA
 *   pgd-storage URI get PATH > DATA        exit 3 when missing
 *   pgd-storage URI exists PATH            prints "yes" or "no"
 *   pgd-storage URI list DIR               "NAME SIZE" or "NAME/" per line
 *   pgd-storage URI rm PATH
 *   pgd-storage URI rm-many PATH...
 *   pgd-storage URI rm-stale DIR SECONDS  temporary objects of killed writers
 *
 * S3 settings other than these come from the AWS_* variables, Azure's from
 * AZURE_STORAGE_*; --part-size is also Azure's block size, and --list-page
 * the entries an S3 or Azure listing page holds (so a test sees several pages). Errors are
 * printed as pgdirect prints them: "pgdirect: error: ...", exit 1.
 *
 * An sftp:// repository takes --sftp-private-key-file FILE and
 * --sftp-known-hosts FILE; with --exit-kind, an error exits 4 when it is
 * PGD_ERR_EXISTS and 5 when it is PGD_ERR_TRANSIENT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/azure/internal.h"
#include "storage/s3/internal.h"
#include "storage/sftp/sftp.h"
#include "storage/storage.h"

#define PGD_STORAGE_CHUNK     (1024 * 1024)
#define PGD_STORAGE_MISSING   3
#define PGD_STORAGE_EXISTS    4
#define PGD_STORAGE_TRANSIENT 5

static bool pgd_storage_print(void *arg, const char *name, uint64_t size, bool is_dir,
                              pgd_error *err)
{
    (void)arg;
    (void)err;
    if (is_dir)
        printf("%s/\n", name);
    else
        printf("%s %llu\n", name, (unsigned long long)size);
    return true;
}

static bool pgd_storage_put(storage *s, const char *path, unsigned flags, pgd_error *err)
{
    out_stream *out = storage_write_open(s, path, flags, err);
    char *buf = malloc(PGD_STORAGE_CHUNK);
    size_t n;

    if (out == NULL || buf == NULL) {
        out_abort(out);
        free(buf);
        return out == NULL ? false : err_set(err, "out of memory");
    }
    while ((n = fread(buf, 1, PGD_STORAGE_CHUNK, stdin)) > 0) {
        if (!out_write(out, buf, n, err)) {
            out_abort(out);
            free(buf);
            return false;
        }
    }
    free(buf);
    return out_close(out, err);
}

static bool pgd_storage_get(storage *s, const char *path, bool *missing, pgd_error *err)
{
    in_stream *in = storage_read_open(s, path, missing, err);
    char *buf = malloc(PGD_STORAGE_CHUNK);
    size_t n;
    bool ok = true;

    if (in == NULL || buf == NULL) {
        in_close(in);
        free(buf);
        return in == NULL ? *missing : err_set(err, "out of memory");
    }
    while ((ok = in_read(in, buf, PGD_STORAGE_CHUNK, &n, err)) && n > 0)
        fwrite(buf, 1, n, stdout);
    in_close(in);
    free(buf);
    return ok;
}

static bool pgd_storage_run(storage *s, int argc, char **argv, int *rc, pgd_error *err)
{
    const char *op = argv[0];
    bool found, missing = false;

    if (strcmp(op, "put") == 0 && argc >= 2)
        return pgd_storage_put(
            s, argv[1],
            argc > 2 && strcmp(argv[2], "no-replace") == 0 ? STORAGE_WRITE_NO_REPLACE : 0, err);
    if (strcmp(op, "get") == 0 && argc == 2) {
        if (!pgd_storage_get(s, argv[1], &missing, err))
            return false;
        *rc = missing ? PGD_STORAGE_MISSING : 0;
        return true;
    }
    if (strcmp(op, "exists") == 0 && argc == 2) {
        if (!storage_exists(s, argv[1], &found, err))
            return false;
        printf("%s\n", found ? "yes" : "no");
        return true;
    }
    if (strcmp(op, "list") == 0 && argc == 2)
        return storage_list(s, argv[1], pgd_storage_print, NULL, err);
    if (strcmp(op, "rm") == 0 && argc == 2)
        return storage_remove(s, argv[1], err);
    if (strcmp(op, "rm-stale") == 0 && argc == 3)
        return storage_remove_stale_temp(s, argv[1], strtoll(argv[2], NULL, 10), err);
    if (strcmp(op, "rm-many") == 0)
        return storage_remove_many(s, (const char *const *)argv + 1, (size_t)argc - 1, err);
    *rc = 2;
    fprintf(stderr, "pgd-storage: unknown operation \"%s\" or wrong arguments\n", op);
    return true;
}

int main(int argc, char **argv)
{
    s3_options o = {0};
    azure_options az = {0};
    sftp_options sf = {0};
    storage_options so = {&o, &az, &sf};
    long list_page = 0;
    pgd_error err = {0};
    storage *s;
    int i = 1, rc = 0;
    bool exit_kind = false;

    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--exit-kind") == 0) {
            exit_kind = true;
            i--;
        } else if (strcmp(argv[i], "--sftp-private-key-file") == 0)
            sf.private_key_file = argv[i + 1];
        else if (strcmp(argv[i], "--sftp-known-hosts") == 0)
            sf.known_hosts = argv[i + 1];
        else if (strcmp(argv[i], "--part-size") == 0)
            o.part_size = az.block_size = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--azure-endpoint") == 0)
            az.endpoint = argv[i + 1];
        else if (strcmp(argv[i], "--list-page") == 0)
            list_page = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--retries") == 0) {
            o.retries =
                atoi(argv[i + 1]) == 0 ? S3_OPTIONS_NO_RETRIES : (unsigned)atoi(argv[i + 1]);
            az.retries = o.retries == S3_OPTIONS_NO_RETRIES ? AZURE_OPTIONS_NO_RETRIES : o.retries;
        }
    }
    if (argc - i < 2) {
        fprintf(stderr, "usage: pgd-storage [--part-size BYTES] [--retries N] URI OPERATION ...\n");
        return 2;
    }
    s = storage_open(argv[i], &so, &err);
    if (s != NULL && list_page > 0 && storage_uri_is_azure(argv[i]))
        ((azure_storage *)s)->list_page = (unsigned)list_page;
    if (s != NULL && list_page > 0 && storage_uri_is_s3(argv[i]))
        ((s3_storage *)s)->list_page = (unsigned)list_page;
    if (s == NULL || !pgd_storage_run(s, argc - i - 1, argv + i + 1, &rc, &err)) {
        fprintf(stderr, "pgdirect: error: %s\n", err.msg);
        rc = !exit_kind                        ? 1
             : err_is(&err, PGD_ERR_EXISTS)    ? PGD_STORAGE_EXISTS
             : err_is(&err, PGD_ERR_TRANSIENT) ? PGD_STORAGE_TRANSIENT
                                               : 1;
    }
    storage_free(s);
    fflush(stdout);
    return rc;
}
