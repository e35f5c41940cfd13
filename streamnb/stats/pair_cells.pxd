# The C types of pair_cells.py, for the compiled build (Cython's augmenting declarations).
cimport cython
from libc cimport math
from streamnb.stats.category_cells cimport Categories
from streamnb.stats.lidstone cimport lidstone_one, smoothed

cdef double[::1] _TABLE

@cython.locals(i=Py_ssize_t)
cpdef double xlogx(double t) noexcept

cdef class SumCells:
    cdef double[::1] sj, sm, gl, p, pl
    cdef Py_ssize_t j0, j1, j2, m0, m1, m2, g0, g1, g2, p0, p1, p2, l0, l1, l2
    cpdef check(self, Py_ssize_t k, Py_ssize_t fmax, Py_ssize_t amax)

cdef class PairCells(Categories):
    cdef double[::1] n, d, t, memo, memo_x
    cdef long long[::1] par
    cdef Py_ssize_t n0, n1, n2, d0, d1, d2, t0, t1, amax, fmax
    cpdef grow(self, Py_ssize_t size)
    cpdef bint read_cells(self, dict x, dict cell_ids, list cf, object exclude, bint strings_only) except -1
    cpdef check(self, Py_ssize_t rows)
    @cython.locals(on=bint)
    cpdef add(self, Py_ssize_t k, double w, SumCells sums)
    cpdef bint learn(self, dict x, dict cell_ids, list cf, object exclude, bint strings_only, Py_ssize_t k,
                     double w, SumCells sums) except -1
    cpdef learn_ids(self, list ids, list fids, Py_ssize_t k, double w, SumCells sums)
    @cython.locals(p=Py_ssize_t)
    cpdef bint parents(self, list pa, Py_ssize_t n_nv) except -1
    @cython.locals(v=double)
    cpdef object joint(self, dict x, dict cell_ids, list cf, object exclude, bint strings_only, list parents,
                       list nv, double alpha, Py_ssize_t n_classes, double prior)
