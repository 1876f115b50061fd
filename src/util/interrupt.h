/*
 * interrupt.h - SIGINT, SIGTERM and SIGHUP during a backup or a restore.
 *
 * The handler only records the signal (and runs a hook that must be
 * async-signal-safe, such as asking the server to cancel a query); the run
 * notices at its next step, removes what it wrote and fails. A second
 * signal acts as if none were caught (SA_RESETHAND): it kills.
 */
#ifndef PGD_INTERRUPT_H
#define PGD_INTERRUPT_H

#include <signal.h>
#include <stdbool.h>

/* Catch the three signals until interrupt_release; hook may be NULL. */
void interrupt_catch(void (*hook)(void));

/* Put back what the signals did before interrupt_catch. */
void interrupt_release(void);

/* The signal that arrived, 0 while none did. */
int interrupt_signal(void);

/* The same, for threads that poll it while they work (work_pool_job.cancel). */
const volatile sig_atomic_t *interrupt_flag(void);

/* "SIGINT", "SIGTERM", "SIGHUP", else "a signal". */
const char *interrupt_signal_name(int sig);

#endif
