# The C types of welford_event.py, for the compiled build (Cython's augmenting declarations).
cimport cython
from libc cimport math

cdef double MAX_ABS, _LOG_2PI, _NAN

@cython.locals(x=double)
cpdef double number(object value)

cdef class WelfordCells:
    cdef long long[::1] ids
    cdef double[::1] xs
    cdef Py_ssize_t size
    cdef double[::1] n, mean, m2, pn, pmean, pm2
    cdef Py_ssize_t n0, n1, p1

    @cython.locals(size=Py_ssize_t, v=double, out_ids="long long[::1]", out_xs="double[::1]")
    cpdef bint read(self, dict x, dict ids, object exclude, bint raw, bint all_known) except -1

    @cython.locals(size=Py_ssize_t, base=Py_ssize_t, n1=Py_ssize_t, p1=Py_ssize_t, n_cells=Py_ssize_t,
                   n_pooled=Py_ssize_t, n_spread=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t, i=Py_ssize_t,
                   has_top=bint, t=double, xv=double, n_a=double, n=double, frac=double, delta=double,
                   s=double, fresh=list, answer=tuple, ev_ids="long long[::1]", ev_xs="double[::1]",
                   N="double[::1]", M="double[::1]", S="double[::1]", PN="double[::1]", PM="double[::1]", PS="double[::1]")
    cpdef object learn(self, dict x, dict ids, Py_ssize_t k, double w, list spread, object top,
                       Py_ssize_t top_id, object exclude, bint raw, Py_ssize_t tracked)

    @cython.locals(size=Py_ssize_t, n1=Py_ssize_t, n_cells=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t,
                   c=Py_ssize_t, r=Py_ssize_t, i=Py_ssize_t, log_var=double, quad=double, n=double,
                   var=double, d=double, ev_ids="long long[::1]", ev_xs="double[::1]",
                   N="double[::1]", M="double[::1]", S="double[::1]")
    cpdef object joint(self, dict x, dict ids, Py_ssize_t n_classes, double ddof, double eps, object exclude,
                       bint raw)
