/*
 * sftp_libs.h - libssh2, opened when a command first uses an SFTP repository
 * (see util/shared_lib.h for why it is not linked at build time).
 *
 * The driver's files include this header instead of <libssh2.h> and call
 * the library's functions by their usual names: each name below is a slot
 * of the table sftp_libs_load fills. Only the _ex forms are called: the
 * short forms are libssh2's own macros over them.
 */
#ifndef PGD_SFTP_LIBS_H
#define PGD_SFTP_LIBS_H

#include "util/error.h"

#include <libssh2.h>
#include <libssh2_sftp.h>
#include <stdbool.h>

/* every libssh2 function pgdirect calls */
#define SFTP_LIBS_FUNCTIONS(X)                                                                     \
    X(libssh2_init)                                                                                \
    X(libssh2_session_init_ex)                                                                     \
    X(libssh2_session_handshake)                                                                   \
    X(libssh2_session_set_timeout)                                                                 \
    X(libssh2_session_hostkey)                                                                     \
    X(libssh2_session_last_error)                                                                  \
    X(libssh2_session_disconnect_ex)                                                               \
    X(libssh2_session_free)                                                                        \
    X(libssh2_knownhost_init)                                                                      \
    X(libssh2_knownhost_readfile)                                                                  \
    X(libssh2_knownhost_checkp)                                                                    \
    X(libssh2_knownhost_free)                                                                      \
    X(libssh2_userauth_publickey_fromfile_ex)                                                      \
    X(libssh2_agent_init)                                                                          \
    X(libssh2_agent_connect)                                                                       \
    X(libssh2_agent_list_identities)                                                               \
    X(libssh2_agent_get_identity)                                                                  \
    X(libssh2_agent_userauth)                                                                      \
    X(libssh2_agent_disconnect)                                                                    \
    X(libssh2_agent_free)                                                                          \
    X(libssh2_channel_open_ex)                                                                     \
    X(libssh2_channel_process_startup)                                                             \
    X(libssh2_channel_read_ex)                                                                     \
    X(libssh2_channel_write_ex)                                                                    \
    X(libssh2_channel_free)                                                                        \
    X(libssh2_sftp_init)                                                                           \
    X(libssh2_sftp_shutdown)                                                                       \
    X(libssh2_sftp_last_error)                                                                     \
    X(libssh2_sftp_open_ex)                                                                        \
    X(libssh2_sftp_read)                                                                           \
    X(libssh2_sftp_write)                                                                          \
    X(libssh2_sftp_fsync)                                                                          \
    X(libssh2_sftp_close_handle)                                                                   \
    X(libssh2_sftp_readdir_ex)                                                                     \
    X(libssh2_sftp_rename_ex)                                                                      \
    X(libssh2_sftp_unlink_ex)                                                                      \
    X(libssh2_sftp_mkdir_ex)                                                                       \
    X(libssh2_sftp_rmdir_ex)                                                                       \
    X(libssh2_sftp_stat_ex)

struct sftp_libs {
#define SFTP_LIBS_SLOT(name) __typeof__(name) *name;
    SFTP_LIBS_FUNCTIONS(SFTP_LIBS_SLOT)
#undef SFTP_LIBS_SLOT
};

extern struct sftp_libs sftp_libs;

/*
 * Open libssh2, resolve the table and initialise the library once
 * (libssh2_init, which is not thread-safe: pthread_once); false with err
 * naming the library and the function.
 */
bool sftp_libs_load(pgd_error *err);

#ifndef SFTP_LIBS_DEFINE_TABLE
#define libssh2_init                           sftp_libs.libssh2_init
#define libssh2_session_init_ex                sftp_libs.libssh2_session_init_ex
#define libssh2_session_handshake              sftp_libs.libssh2_session_handshake
#define libssh2_session_set_timeout            sftp_libs.libssh2_session_set_timeout
#define libssh2_session_hostkey                sftp_libs.libssh2_session_hostkey
#define libssh2_session_last_error             sftp_libs.libssh2_session_last_error
#define libssh2_session_disconnect_ex          sftp_libs.libssh2_session_disconnect_ex
#define libssh2_session_free                   sftp_libs.libssh2_session_free
#define libssh2_knownhost_init                 sftp_libs.libssh2_knownhost_init
#define libssh2_knownhost_readfile             sftp_libs.libssh2_knownhost_readfile
#define libssh2_knownhost_checkp               sftp_libs.libssh2_knownhost_checkp
#define libssh2_knownhost_free                 sftp_libs.libssh2_knownhost_free
#define libssh2_userauth_publickey_fromfile_ex sftp_libs.libssh2_userauth_publickey_fromfile_ex
#define libssh2_agent_init                     sftp_libs.libssh2_agent_init
#define libssh2_agent_connect                  sftp_libs.libssh2_agent_connect
#define libssh2_agent_list_identities          sftp_libs.libssh2_agent_list_identities
#define libssh2_agent_get_identity             sftp_libs.libssh2_agent_get_identity
#define libssh2_agent_userauth                 sftp_libs.libssh2_agent_userauth
#define libssh2_agent_disconnect               sftp_libs.libssh2_agent_disconnect
#define libssh2_agent_free                     sftp_libs.libssh2_agent_free
#define libssh2_channel_open_ex                sftp_libs.libssh2_channel_open_ex
#define libssh2_channel_process_startup        sftp_libs.libssh2_channel_process_startup
#define libssh2_channel_read_ex                sftp_libs.libssh2_channel_read_ex
#define libssh2_channel_write_ex               sftp_libs.libssh2_channel_write_ex
#define libssh2_channel_free                   sftp_libs.libssh2_channel_free
#define libssh2_sftp_init                      sftp_libs.libssh2_sftp_init
#define libssh2_sftp_shutdown                  sftp_libs.libssh2_sftp_shutdown
#define libssh2_sftp_last_error                sftp_libs.libssh2_sftp_last_error
#define libssh2_sftp_open_ex                   sftp_libs.libssh2_sftp_open_ex
#define libssh2_sftp_read                      sftp_libs.libssh2_sftp_read
#define libssh2_sftp_write                     sftp_libs.libssh2_sftp_write
#define libssh2_sftp_fsync                     sftp_libs.libssh2_sftp_fsync
#define libssh2_sftp_close_handle              sftp_libs.libssh2_sftp_close_handle
#define libssh2_sftp_readdir_ex                sftp_libs.libssh2_sftp_readdir_ex
#define libssh2_sftp_rename_ex                 sftp_libs.libssh2_sftp_rename_ex
#define libssh2_sftp_unlink_ex                 sftp_libs.libssh2_sftp_unlink_ex
#define libssh2_sftp_mkdir_ex                  sftp_libs.libssh2_sftp_mkdir_ex
#define libssh2_sftp_rmdir_ex                  sftp_libs.libssh2_sftp_rmdir_ex
#define libssh2_sftp_stat_ex                   sftp_libs.libssh2_sftp_stat_ex
#endif

#endif
