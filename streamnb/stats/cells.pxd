# The C types of cells.py, for the compiled build (Cython's augmenting declarations).
cimport cython
from libc cimport math
from streamnb.stats.gaussian_density cimport log_density_sum
from streamnb.stats.normalize cimport exp_normalized
from streamnb.stats.lidstone cimport lidstone_log_count, lidstone_log_total
from streamnb.stats.welford cimport welford_one

cdef double MAX_ABS, _NAN, _INF

cpdef double number(object value)

cpdef object split_strings(dict x, object kinds=*)

@cython.locals(total=double, v=double, shift=double, top=double, m=double)
cpdef object posterior(list jll, double[::1] counts, Py_ssize_t step)

cdef class ClassWeights:
    cdef double[::1] counts
    cdef Py_ssize_t step
    cpdef object posterior(self, list jll)

cdef class Event:
    cdef long long[::1] ids
    cdef double[::1] xs, acc
    cdef Py_ssize_t size, unknown
    cpdef double[::1] zeroed(self, Py_ssize_t n_classes)
    cpdef Py_ssize_t read(self, dict x, dict ids, object exclude, bint raw, bint nonnegative) except -2

cdef class WelfordCells(Event):
    cdef double[::1] n, mean, m2, pn, pmean, pm2
    cdef Py_ssize_t n0, n1, p1
    cpdef object learn(self, dict x, dict ids, Py_ssize_t k, double w, list spread, object top,
                       Py_ssize_t top_id, object exclude, bint raw, Py_ssize_t tracked)
    @cython.locals(has_top=bint, t=double, n=double, m2=double)
    cpdef tuple update(self, Py_ssize_t k, double w, list spread, object top, Py_ssize_t top_id,
                       Py_ssize_t tracked)
    cpdef object joint(self, dict x, dict ids, Py_ssize_t n_classes, double ddof, double eps, object exclude,
                       bint raw)

cdef class CountCells(Event):
    cdef double[::1] counts, totals, zeros
    cdef Py_ssize_t c0, c1, t0, z0
    cpdef check(self, Py_ssize_t n_classes)
    cpdef list score(self, Py_ssize_t n_classes, double alpha, Py_ssize_t n_tokens)
    cpdef add(self, Py_ssize_t k, double w)
    cpdef bint learn(self, object x, dict ids, Py_ssize_t k, double w, bint raw) except -1
    cpdef object joint(self, dict x, dict ids, Py_ssize_t n_classes, double alpha, Py_ssize_t n_tokens, bint raw)
