# The C types of category_cells.py, for the compiled build (Cython's augmenting declarations).
# The build's copy cimports Event from the compiled cells (see setup.py).
cimport cython
from libc cimport math
from streamnb.stats.cells cimport Event
from streamnb.stats.lidstone cimport lidstone_one


cdef class Categories(Event):
    cdef long long[::1] cats
    cpdef grow(self, Py_ssize_t size)
    cpdef bint read_categories(self, dict x, dict cell_ids, dict feat_ids, object exclude,
                               bint strings_only) except -1
    cpdef take(self, list feat_ids, list cell_ids)

cdef class CategoryCells(Categories):
    cdef double[::1] counts, totals
    cdef Py_ssize_t c0, c1, t0, t1
    cpdef check(self, Py_ssize_t rows)
    @cython.locals(nvj=double)
    cpdef object score(self, list nv, Py_ssize_t n_classes, double alpha, bint smooth)
    cpdef bint add(self, Py_ssize_t k, double w) except -1
    cpdef bint learn(self, object x, dict cell_ids, dict feat_ids, Py_ssize_t k, double w, object exclude,
                     bint strings_only) except -1
    cpdef object joint(self, dict x, dict cell_ids, dict feat_ids, list nv, Py_ssize_t n_classes, double alpha,
                       bint smooth, object exclude, bint strings_only)
