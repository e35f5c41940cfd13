# The C types of moment_cells.py, for the compiled build (Cython's augmenting declarations). The
# build's copy cimports WelfordCells from the compiled cells and comoment from the compiled welford
# (see setup.py).
cimport cython
from libc cimport math
from streamnb.stats.cells cimport WelfordCells
from streamnb.stats.gaussian_density cimport log_density
from streamnb.stats.welford cimport comoment

cdef double PRIOR, TINY

cdef class MomentCells(WelfordCells):
    cdef double[::1] cn, cm, cs, cc, parx, jac
    cdef long long[::1] par
    cdef Py_ssize_t s0, s1, s2
    cpdef grow(self, Py_ssize_t size)
    cpdef object learn_moments(self, dict x, dict ids, Py_ssize_t k, double w, list spread, object top,
                               Py_ssize_t top_id, object exclude, bint raw, Py_ssize_t limit, bytearray scales)
    cpdef bint add_log_slots(self, bytearray scales) except -1
    cpdef check_pairs(self, Py_ssize_t k, Py_ssize_t limit)
    cpdef add_pairs(self, Py_ssize_t k, double w, Py_ssize_t limit)
    cpdef object joint_tree(self, dict x, dict ids, list parents, object exclude, bint raw, double eps,
                            Py_ssize_t n_classes, bytearray scales)
    @cython.locals(has=bint)
    cpdef bint use_log_slots(self, bytearray scales) except -1
    @cython.locals(p=Py_ssize_t)
    cpdef bint find_parents(self, list parents) except -1
    cpdef check_tree(self, Py_ssize_t n_classes)
    cpdef list tree_scores(self, Py_ssize_t n_classes, double eps)
