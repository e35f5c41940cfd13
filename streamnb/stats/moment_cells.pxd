# The C types of moment_cells.py, for the compiled build (Cython's augmenting declarations). The
# build's copy cimports WelfordCells from the compiled cells (see setup.py).
cimport cython
from libc cimport math
from streamnb.stats.cells cimport WelfordCells

cdef double PRIOR, TINY, LOG_2PI, MAX_FLOAT

cdef class MomentCells(WelfordCells):
    cdef double[::1] cn, cm, cs, cc, parx, jac
    cdef long long[::1] par
    cdef Py_ssize_t s0, s1, s2

    cpdef grow(self, Py_ssize_t size)

    @cython.locals(read=Py_ssize_t)
    cpdef object learn_moments(self, dict x, dict ids, Py_ssize_t k, double w, list spread, object top,
                               Py_ssize_t top_id, object exclude, bint raw, Py_ssize_t limit, bytearray scales)

    @cython.locals(ev_ids="long long[::1]", ev_xs="double[::1]", PN="double[::1]", p1=Py_ssize_t,
                   size=Py_ssize_t, ns=Py_ssize_t, n_pooled=Py_ssize_t,
                   out=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t, q=Py_ssize_t, slot=double, feature=double, v=double)
    cpdef bint add_log_slots(self, bytearray scales) except -1

    @cython.locals(ev_ids="long long[::1]", top=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t, i=Py_ssize_t)
    cpdef check_pairs(self, Py_ssize_t k, Py_ssize_t limit)

    @cython.locals(ev_ids="long long[::1]", ev_xs="double[::1]", d=Py_ssize_t, f=Py_ssize_t, g=Py_ssize_t,
                   N="double[::1]", M="double[::1]", S="double[::1]", C="double[::1]", s1=Py_ssize_t,
                   s2=Py_ssize_t, base=Py_ssize_t, a=Py_ssize_t, b=Py_ssize_t, xa=double, row=Py_ssize_t,
                   col=Py_ssize_t, ab=Py_ssize_t, ba=Py_ssize_t, last=double, n_a=double, n=double, frac=double,
                   kk=double, da=double, dab=double, dba=double)
    cpdef add_pairs(self, Py_ssize_t k, double w, Py_ssize_t limit)

    cpdef object joint_tree(self, dict x, dict ids, list parents, object exclude, bint raw, double eps,
                            Py_ssize_t n_classes, bytearray scales)

    @cython.locals(ev_ids="long long[::1]", ev_xs="double[::1]", jac="double[::1]",
                   has=bint, ns=Py_ssize_t, d=Py_ssize_t, f=Py_ssize_t,
                   j=Py_ssize_t, v=double, t=double)
    cpdef bint use_log_slots(self, bytearray scales) except -1

    @cython.locals(ev_ids="long long[::1]", ev_xs="double[::1]", par="long long[::1]", parx="double[::1]",
                   size=Py_ssize_t, n_pa=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t, p=Py_ssize_t, q=Py_ssize_t)
    cpdef bint find_parents(self, list parents) except -1

    @cython.locals(ev_ids="long long[::1]", par="long long[::1]", top=Py_ssize_t, pair=Py_ssize_t,
                   f=Py_ssize_t, j=Py_ssize_t, p=Py_ssize_t, last=Py_ssize_t, i=Py_ssize_t, q=Py_ssize_t)
    cpdef check_tree(self, Py_ssize_t n_classes)

    @cython.locals(ev_ids="long long[::1]", ev_xs="double[::1]", par="long long[::1]", parx="double[::1]",
                   jac="double[::1]", N="double[::1]", M="double[::1]", S="double[::1]", PN="double[::1]",
                   PM="double[::1]", PS="double[::1]", CN="double[::1]", CM="double[::1]", CS="double[::1]",
                   CC="double[::1]", s0=Py_ssize_t, s1=Py_ssize_t, s2=Py_ssize_t, row=Py_ssize_t, n1=Py_ssize_t,
                   p1=Py_ssize_t, out=list, terms=list, k=Py_ssize_t, f=Py_ssize_t, j=Py_ssize_t, p=Py_ssize_t,
                   i=Py_ssize_t, jp=Py_ssize_t, pj=Py_ssize_t, mean=double, var=double, have=bint, n=double,
                   v_j=double, spp=double, cjp=double, b=double, a=double, rss=double, d=double)
    cpdef list tree_scores(self, Py_ssize_t n_classes, double eps)
