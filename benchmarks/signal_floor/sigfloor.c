/* An interval timer whose SIGALRM handler is C and does nothing but count: what a 1 kHz timer
 * signal costs a compile when no Python code runs per signal (the floor under any in-process
 * Python sampler). Built on the fly by benchmarks/bench_signal_floor.py; never part of dynaprof. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t count = 0;

static void on_alarm(int sig) { (void)sig; count++; }

static PyObject *start(PyObject *self, PyObject *args) {
    int usec;
    if (!PyArg_ParseTuple(args, "i", &usec)) return NULL;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = 0; /* as CPython installs its handlers: interrupted system calls return EINTR */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, usec}, {0, usec}};
    setitimer(ITIMER_REAL, &it, NULL);
    Py_RETURN_NONE;
}

static PyObject *stop(PyObject *self, PyObject *args) {
    struct itimerval it = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
    signal(SIGALRM, SIG_DFL);
    long n = count;
    count = 0;
    return PyLong_FromLong(n);
}

static PyMethodDef methods[] = {
    {"start", start, METH_VARARGS, "start(interval_us): a C handler counts SIGALRM ticks"},
    {"stop", stop, METH_NOARGS, "stop() -> ticks counted"},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "sigfloor", NULL, -1, methods};
PyMODINIT_FUNC PyInit_sigfloor(void) { return PyModule_Create(&module); }
