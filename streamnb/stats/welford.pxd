# The C types of welford.py's one-cell forms, for the compiled build (Cython's augmenting
# declarations). The compiled cells cimport them from its build (see setup.py).
cimport cython

@cython.locals(n=double, frac=double, delta=double)
cdef (double, double, double) welford_one(double n_a, double mean, double m2, double x, double w) noexcept

cdef double comoment(double c, double d_i, double d_j, double k) noexcept
