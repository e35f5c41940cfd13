# The C types of lidstone.py, for the compiled build (Cython's augmenting declarations). The
# compiled cells cimport lidstone_one, smoothed and the parts for alpha > 0 from its build (see
# setup.py).
cimport cython
from libc cimport math

cpdef double lidstone_one(double num, double den, double alpha, double n_values, double epsilon=*) noexcept
cpdef double lidstone_log_count(double num, double alpha) noexcept
cpdef double lidstone_log_total(double den, double alpha, double n_values) noexcept
cpdef double lidstone_log_odds(double num, double den, double alpha) noexcept

@cython.locals(th=double, p=double)
cpdef double smoothed(double num, double den, double nx, double t, double alpha, double nv,
                      double prior) noexcept
