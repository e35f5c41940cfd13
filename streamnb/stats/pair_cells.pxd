# The C types of pair_cells.py, for the compiled build (Cython's augmenting declarations).
cimport cython
from libc cimport math
from streamnb.stats.category_cells cimport Categories

cdef double _MAX_FLOAT
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
    cdef Py_ssize_t n0, n1, n2, d0, d1, d2, t0, t1

    cpdef grow(self, Py_ssize_t size)

    @cython.locals(ev_ids="long long[::1]", ev_fids="long long[::1]", n_cf=Py_ssize_t, i=Py_ssize_t,
                   cid=Py_ssize_t)
    cpdef bint read_cells(self, dict x, dict cell_ids, list cf, object exclude, bint strings_only) except -1

    @cython.locals(size=Py_ssize_t, ev_ids="long long[::1]", ev_fids="long long[::1]", amax=Py_ssize_t,
                   fmax=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, a=Py_ssize_t, fa=Py_ssize_t, b=Py_ssize_t,
                   fb=Py_ssize_t, c=Py_ssize_t, old=double, now=double, dv=double, tx=double, delta=double,
                   pt=double, px=double, on=bint,
                   N="double[::1]", D="double[::1]", T="double[::1]", memo="double[::1]", memo_x="double[::1]",
                   SJ="double[::1]", SM="double[::1]", GL="double[::1]", P="double[::1]", PL="double[::1]",
                   n0=Py_ssize_t, n1=Py_ssize_t, n2=Py_ssize_t, d0=Py_ssize_t, d1=Py_ssize_t, d2=Py_ssize_t,
                   t0=Py_ssize_t, t1=Py_ssize_t, j0=Py_ssize_t, j1=Py_ssize_t, j2=Py_ssize_t, m0=Py_ssize_t,
                   m1=Py_ssize_t, m2=Py_ssize_t, g0=Py_ssize_t, g1=Py_ssize_t, g2=Py_ssize_t, p0=Py_ssize_t,
                   p1=Py_ssize_t, p2=Py_ssize_t, l0=Py_ssize_t, l1=Py_ssize_t, l2=Py_ssize_t)
    cpdef add(self, Py_ssize_t k, double w, SumCells sums)

    cpdef bint learn(self, dict x, dict cell_ids, list cf, object exclude, bint strings_only, Py_ssize_t k,
                     double w, SumCells sums) except -1

    cpdef learn_ids(self, list ids, list fids, Py_ssize_t k, double w, SumCells sums)

    @cython.locals(ev_ids="long long[::1]", ev_fids="long long[::1]", par="long long[::1]", size=Py_ssize_t,
                   n_pa=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, p=Py_ssize_t, q=Py_ssize_t)
    cpdef bint parents(self, list pa, Py_ssize_t n_nv) except -1

    @cython.locals(groups=Py_ssize_t, size=Py_ssize_t, ev_ids="long long[::1]", ev_fids="long long[::1]",
                   par="long long[::1]", amax=Py_ssize_t, fmax=Py_ssize_t, last=Py_ssize_t, i=Py_ssize_t,
                   c=Py_ssize_t, a=Py_ssize_t, j=Py_ssize_t, b=Py_ssize_t, av=double, th=double,
                   N="double[::1]", D="double[::1]", T="double[::1]", n0=Py_ssize_t, n1=Py_ssize_t,
                   n2=Py_ssize_t, d0=Py_ssize_t, d1=Py_ssize_t, d2=Py_ssize_t, t0=Py_ssize_t, t1=Py_ssize_t,
                   n_nv=Py_ssize_t, out=list, terms=list)
    cpdef object joint(self, dict x, dict cell_ids, list cf, object exclude, bint strings_only, list parents,
                       list nv, double alpha, Py_ssize_t n_classes, double prior)
