# The C types of gaussian_density.py, for the compiled build (Cython's augmenting declarations).
# The compiled cells cimport log_density and log_density_sum from its build (see setup.py).
cimport cython
from libc cimport math

cdef double LOG_2PI

cpdef double log_density(double d, double var) noexcept

cpdef double log_density_sum(double n, double log_var, double quad) noexcept
