/*
 * io_engine.c - engine selection.
 */
#include "io/io_engine.h"

const char *io_engine_name(io_engine_kind kind)
{
    return kind == IO_ENGINE_URING ? "io_uring" : "threads";
}

io_engine *io_engine_new(io_engine_kind kind, unsigned depth, pgd_error *err)
{
    if (depth == 0)
        depth = 1;
    return kind == IO_ENGINE_URING ? io_engine_uring_new(depth, err)
                                   : io_engine_threads_new(depth, err);
}
