# The C types of words.py, for the compiled build (Cython's augmenting declarations).
cimport cython

cdef inline bint is_word(Py_UCS4 ch)

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, last=Py_ssize_t, ch=Py_UCS4, c=Py_UCS4, word=bint,
               prev_word=bint, out=dict)
cpdef dict count_words(str text)
