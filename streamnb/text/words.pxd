# The C types of words.py, for the compiled build (Cython's augmenting declarations).

cdef inline bint is_word(Py_UCS4 ch)

cpdef dict count_words(str text)
