# The C types of cells.py, for the compiled build (Cython's augmenting declarations).
cimport cython
from libc cimport math

cdef double MAX_ABS, _LOG_2PI, _NAN, _MAX_FLOAT

@cython.locals(x=double)
cpdef double number(object value)

cpdef tuple split_strings(dict x)

@cython.locals(n_classes=Py_ssize_t, c=Py_ssize_t, total=double, log_total=double, shift=double, top=double,
               v=double, m=double, n=list, u=list)
cpdef object posterior(list jll, double[::1] counts, Py_ssize_t step)

cdef class Event:
    cdef long long[::1] ids
    cdef double[::1] xs, acc
    cdef Py_ssize_t size

    @cython.locals(out="double[::1]", c=Py_ssize_t)
    cpdef double[::1] zeroed(self, Py_ssize_t n_classes)

    @cython.locals(size=Py_ssize_t, unknown=Py_ssize_t, v=double, out_ids="long long[::1]", out_xs="double[::1]")
    cpdef Py_ssize_t read(self, dict x, dict ids, object exclude, bint raw, bint nonnegative) except -2

cdef class WelfordCells(Event):
    cdef double[::1] n, mean, m2, pn, pmean, pm2
    cdef Py_ssize_t n0, n1, p1

    cpdef object learn(self, dict x, dict ids, Py_ssize_t k, double w, list spread, object top,
                       Py_ssize_t top_id, object exclude, bint raw, Py_ssize_t tracked)

    @cython.locals(size=Py_ssize_t, base=Py_ssize_t, n1=Py_ssize_t, p1=Py_ssize_t, n_cells=Py_ssize_t,
                   n_pooled=Py_ssize_t, n_spread=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t, i=Py_ssize_t,
                   has_top=bint, t=double, xv=double, n_a=double, n=double, frac=double, delta=double,
                   s=double, fresh=list, answer=tuple, ev_ids="long long[::1]", ev_xs="double[::1]",
                   N="double[::1]", M="double[::1]", S="double[::1]", PN="double[::1]", PM="double[::1]",
                   PS="double[::1]")
    cpdef tuple update(self, Py_ssize_t k, double w, list spread, object top, Py_ssize_t top_id,
                       Py_ssize_t tracked)

    @cython.locals(size=Py_ssize_t, n1=Py_ssize_t, n_cells=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t,
                   c=Py_ssize_t, r=Py_ssize_t, i=Py_ssize_t, log_var=double, quad=double, n=double,
                   var=double, d=double, ev_ids="long long[::1]", ev_xs="double[::1]",
                   N="double[::1]", M="double[::1]", S="double[::1]")
    cpdef object joint(self, dict x, dict ids, Py_ssize_t n_classes, double ddof, double eps, object exclude,
                       bint raw)

cdef class CountCells(Event):
    cdef double[::1] counts, totals
    cdef Py_ssize_t c0, c1, t0

    @cython.locals(last=Py_ssize_t, n_cells=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t)
    cpdef check(self, Py_ssize_t n_classes)

    @cython.locals(cv="double[::1]", tv="double[::1]", c0=Py_ssize_t, c1=Py_ssize_t, t0=Py_ssize_t,
                   ev_ids="long long[::1]", ev_xs="double[::1]", out="double[::1]", mass=double, xv=double,
                   f=Py_ssize_t, c=Py_ssize_t, col=Py_ssize_t, a_v=double)
    cpdef list score(self, Py_ssize_t n_classes, double alpha, Py_ssize_t n_tokens)

    @cython.locals(cv="double[::1]", row=Py_ssize_t, c1=Py_ssize_t, ev_ids="long long[::1]",
                   ev_xs="double[::1]", total=double, xv=double, f=Py_ssize_t)
    cpdef add(self, Py_ssize_t k, double w)

    cpdef bint learn(self, dict x, dict ids, Py_ssize_t k, double w, bint raw) except -1

    cpdef object joint(self, dict x, dict ids, Py_ssize_t n_classes, double alpha, Py_ssize_t n_tokens, bint raw)

    @cython.locals(unknown=Py_ssize_t, learn=bint, out=list)
    cpdef object step(self, dict x, dict ids, Py_ssize_t n_classes, double alpha, Py_ssize_t n_tokens,
                      Py_ssize_t k, double w)
