# The C types of normalize.py, for the compiled build (Cython's augmenting declarations). The
# compiled cells cimport exp_normalized from its build (see setup.py).
cimport cython
from libc cimport math

@cython.locals(n=Py_ssize_t, c=Py_ssize_t, total=double, e=double)
cpdef list exp_normalized(list u, double top)
