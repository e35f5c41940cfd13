# The C types of category_cells.py, for the compiled build (Cython's augmenting declarations).
# The build's copy cimports Event from the compiled cells (see setup.py).
cimport cython
from libc cimport math
from streamnb.stats.cells cimport Event

cdef double _MAX_FLOAT

cdef class Categories(Event):
    cdef long long[::1] cats

    @cython.locals(size=Py_ssize_t)
    cpdef grow(self, Py_ssize_t size)

    @cython.locals(size=Py_ssize_t, ev_ids="long long[::1]", ev_cats="long long[::1]")
    cpdef bint read_categories(self, dict x, dict cell_ids, dict feat_ids, object exclude,
                               bint strings_only) except -1

    @cython.locals(size=Py_ssize_t, f=Py_ssize_t, ev_ids="long long[::1]", ev_cats="long long[::1]")
    cpdef take(self, list feat_ids, list cell_ids)

cdef class CategoryCells(Categories):
    cdef double[::1] counts, totals
    cdef Py_ssize_t c0, c1, t0, t1

    @cython.locals(last_c=Py_ssize_t, last_t=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t, v=Py_ssize_t)
    cpdef check(self, Py_ssize_t rows)

    @cython.locals(cv="double[::1]", tv="double[::1]", c0=Py_ssize_t, c1=Py_ssize_t, t0=Py_ssize_t, t1=Py_ssize_t,
                   ev_ids="long long[::1]", ev_cats="long long[::1]", out="double[::1]", la=double,
                   n_nv=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t, v=Py_ssize_t, a_nv=double, tf=Py_ssize_t,
                   vc=Py_ssize_t, c=Py_ssize_t)
    cpdef object score(self, list nv, Py_ssize_t n_classes, double alpha, bint smooth)

    @cython.locals(ev_ids="long long[::1]", ev_cats="long long[::1]", f=Py_ssize_t, cv="double[::1]",
                   tv="double[::1]", kc=Py_ssize_t, kt=Py_ssize_t, c1=Py_ssize_t, t1=Py_ssize_t)
    cpdef bint add(self, Py_ssize_t k, double w) except -1

    cpdef bint learn(self, dict x, dict cell_ids, dict feat_ids, Py_ssize_t k, double w, object exclude,
                     bint strings_only) except -1

    cpdef object joint(self, dict x, dict cell_ids, dict feat_ids, list nv, Py_ssize_t n_classes, double alpha,
                       bint smooth, object exclude, bint strings_only)

    @cython.locals(learned=bint)
    cpdef object step(self, dict x, dict cell_ids, dict feat_ids, list nv, Py_ssize_t n_classes, double alpha,
                      bint smooth, object exclude, bint strings_only, Py_ssize_t k, double w)
