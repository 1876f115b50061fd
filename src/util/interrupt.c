/*
 * interrupt.c - the signals that stop a run cleanly (see interrupt.h).
 */
#include "util/interrupt.h"

#include <string.h>

static const int interrupt_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define INTERRUPT_NSIGNALS (sizeof(interrupt_signals) / sizeof(interrupt_signals[0]))

static volatile sig_atomic_t interrupt_received;
static void (*interrupt_hook)(void);
static struct sigaction interrupt_saved[INTERRUPT_NSIGNALS];
static bool interrupt_caught;

static void interrupt_handler(int sig)
{
    interrupt_received = sig;
    if (interrupt_hook != NULL)
        interrupt_hook();
}

void interrupt_catch(void (*hook)(void))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = interrupt_handler;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    interrupt_hook = hook;
    for (size_t i = 0; i < INTERRUPT_NSIGNALS; i++)
        sigaction(interrupt_signals[i], &sa, &interrupt_saved[i]);
    interrupt_caught = true;
}

void interrupt_release(void)
{
    if (!interrupt_caught)
        return;
    for (size_t i = 0; i < INTERRUPT_NSIGNALS; i++)
        sigaction(interrupt_signals[i], &interrupt_saved[i], NULL);
    interrupt_caught = false;
}

int interrupt_signal(void)
{
    return interrupt_received;
}

const volatile sig_atomic_t *interrupt_flag(void)
{
    return &interrupt_received;
}

const char *interrupt_signal_name(int sig)
{
    return sig == SIGINT    ? "SIGINT"
           : sig == SIGTERM ? "SIGTERM"
           : sig == SIGHUP  ? "SIGHUP"
                            : "a signal";
}
