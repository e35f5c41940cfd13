/* The per-event path of the naive Bayes parts in C: one event in, the cells of that event read
 * or updated, nothing else touched.
 *
 * Being retired: GaussianNB, MultinomialNB and CategoricalNB already run streamnb/stats/cells.py,
 * the tree learners' pair counts streamnb/stats/pair_cells.py, plain Python sources that Cython
 * compiles; the parts here move there statistic by statistic.
 *
 * Each function is the exact counterpart of a plain-float loop in the Python part it serves
 * (streamnb/naive_bayes/base.py, streamnb/bn/): the same
 * formulas, the same order of floating-point operations, so the results are the same bits
 * (tests/naive_bayes/test_kernels.py compares both paths). The statistics stay numpy arrays
 * owned by Python; a function receives flat memoryviews of them (Statistic.flat) and their
 * element strides, and the Index dictionaries that map keys to ids.
 *
 * Anything out of the ordinary makes a function return None *before* it changes anything, and
 * the caller takes the Python path, which validates, registers new keys and raises the errors:
 * a value that is not a plain finite number (or not a str/int category), a key that is not a
 * str, a feature or category never seen (when learning), a cell needing special care (no
 * variance yet). So the C path never decides anything the Python path would decide otherwise.
 *
 * Build flags: -ffp-contract=off (no fused multiply-add, which would change the last bits).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define MAX_ABS 1e100
#define LOG_2PI 1.8378770664093453 /* math.log(2.0 * math.pi) */
#define SMALL 64

/* -- arguments ------------------------------------------------------------------------- */

typedef struct {
    double *p;
    Py_ssize_t n;
} view_t;

/* A statistic's flat array (Statistic.flat): a writable, C-contiguous memoryview of native
 * float64 ('d'). Anything else is a caller's bug: a TypeError saying what was given, before
 * any cell is read (a view of int64 or of every other element would be read as the wrong
 * cells). */
static int get_view(PyObject *obj, view_t *v) {
    if (!PyMemoryView_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "streamnb kernel: expected a memoryview of float64, got %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    Py_buffer *b = PyMemoryView_GET_BUFFER(obj);
    const char *format = b->format == NULL ? "B" : b->format;
    if (format[0] == '@' || format[0] == '=') format++;
#if PY_LITTLE_ENDIAN
    if (format[0] == '<') format++;
#else
    if (format[0] == '>' || format[0] == '!') format++;
#endif
    if (strcmp(format, "d") != 0 || b->itemsize != (Py_ssize_t)sizeof(double)) {
        PyErr_Format(PyExc_TypeError, "streamnb kernel: expected a memoryview of float64 ('d'), got format '%.20s'",
                     b->format == NULL ? "B" : b->format);
        return -1;
    }
    if (!PyBuffer_IsContiguous(b, 'C')) {
        PyErr_SetString(PyExc_TypeError, "streamnb kernel: expected a C-contiguous memoryview of float64");
        return -1;
    }
    if (b->readonly) {
        PyErr_SetString(PyExc_TypeError, "streamnb kernel: expected a writable memoryview of float64");
        return -1;
    }
    v->p = (double *)b->buf;
    v->n = b->len / (Py_ssize_t)sizeof(double);
    return 0;
}

static int get_index(PyObject *obj, Py_ssize_t *out) {
    Py_ssize_t i = PyLong_AsSsize_t(obj);
    if (i == -1 && PyErr_Occurred()) return -1;
    *out = i;
    return 0;
}

static int get_double(PyObject *obj, double *out) {
    double d = PyFloat_AsDouble(obj);
    if (d == -1.0 && PyErr_Occurred()) return -1;
    *out = d;
    return 0;
}

static int check_dict(PyObject *obj, const char *what) {
    if (!PyDict_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "expected a dict (%s)", what);
        return -1;
    }
    return 0;
}

#define CHECK_NARGS(want)                                                                     \
    if (nargs != (want)) {                                                                     \
        PyErr_Format(PyExc_TypeError, "expected %d arguments, got %zd", (want), nargs);       \
        return NULL;                                                                           \
    }

/* A cell index outside its array means the views and the ids disagree: a bug, never data. */
#define IN(view, i)                                                                           \
    if ((i) < 0 || (i) >= (view).n) {                                                          \
        PyErr_SetString(PyExc_IndexError, "streamnb kernel: cell outside its statistic");    \
        goto fail;                                                                             \
    }

/* 1 and the value if ``v`` is a plain finite number with |v| <= MAX_ABS (a float, a float
 * subclass such as numpy.float64, or an int that is not a bool); 0 otherwise. */
static int plain_number(PyObject *v, double *out) {
    double d;
    if (PyFloat_Check(v)) {
        d = PyFloat_AS_DOUBLE(v);
    } else if (PyLong_CheckExact(v)) {
        d = PyLong_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
    } else {
        return 0;
    }
    if (!(fabs(d) <= MAX_ABS)) return 0;
    *out = d;
    return 1;
}

/* The id of ``key`` in an Index's dict: >= 0, -1 if absent, -2 on error. */
static Py_ssize_t lookup(PyObject *ids, PyObject *key) {
    PyObject *got = PyDict_GetItemWithError(ids, key);
    if (got == NULL) return PyErr_Occurred() ? -2 : -1;
    Py_ssize_t i = PyLong_AsSsize_t(got);
    if (i == -1 && PyErr_Occurred()) return -2;
    return i;
}

/* An event's (id, value) pairs: on the stack for small events. */
typedef struct {
    Py_ssize_t *id;
    double *x;
    Py_ssize_t n;
    Py_ssize_t small_id[SMALL];
    double small_x[SMALL];
} event_t;

static int event_init(event_t *e, Py_ssize_t size) {
    e->n = 0;
    if (size <= SMALL) {
        e->id = e->small_id;
        e->x = e->small_x;
        return 0;
    }
    e->id = PyMem_Malloc(size * sizeof(Py_ssize_t));
    e->x = PyMem_Malloc(size * sizeof(double));
    if (e->id == NULL || e->x == NULL) {
        PyMem_Free(e->id == e->small_id ? NULL : e->id);
        PyMem_Free(e->x == e->small_x ? NULL : e->x);
        e->id = e->small_id;
        e->x = e->small_x;
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void event_free(event_t *e) {
    if (e->id != e->small_id) PyMem_Free(e->id);
    if (e->x != e->small_x) PyMem_Free(e->x);
}

static int read_numeric_except(PyObject *x, PyObject *ids, PyObject *exclude, int nonnegative, int all_known,
                               event_t *e);

/* Read a numeric event: every value checked (``nonnegative``: also >= 0), every key a str.
 * Known keys are kept with their ids; an unknown key is skipped, or, with ``all_known``,
 * makes the event not plain. Returns 1 plain, 0 not plain (the Python path decides), -1 error. */
static int read_numeric(PyObject *x, PyObject *ids, int nonnegative, int all_known, event_t *e) {
    return read_numeric_except(x, ids, Py_None, nonnegative, all_known, e);
}

/* read_numeric, and a key in ``exclude`` (a dict, or None: nothing) makes the event not plain. */
static int read_numeric_except(PyObject *x, PyObject *ids, PyObject *exclude, int nonnegative, int all_known,
                               event_t *e) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(x, &pos, &key, &value)) {
        double v;
        if (!PyUnicode_CheckExact(key) || !plain_number(value, &v) || (nonnegative && v < 0)) return 0;
        if (exclude != Py_None) {
            int in = PyDict_Contains(exclude, key);
            if (in != 0) return in < 0 ? -1 : 0;
        }
        Py_ssize_t j = lookup(ids, key);
        if (j == -2) return -1;
        if (j == -1) {
            if (all_known) return 0;
            continue;
        }
        e->id[e->n] = j;
        e->x[e->n] = v;
        e->n++;
    }
    return 1;
}

static PyObject *float_list(const double *v, Py_ssize_t n) {
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *f = PyFloat_FromDouble(v[i]);
        if (f == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, f);
    }
    return out;
}

#define MAX_CLASSES 256 /* more classes: the Python path */

/* -- math.fsum (CPython's msum: Shewchuk's exact partials, correctly rounded) ------------- */

static double fsum(const double *v, Py_ssize_t n) {
    double partials[64];
    Py_ssize_t m = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        double x = v[k];
        Py_ssize_t i = 0;
        for (Py_ssize_t j = 0; j < m; j++) {
            double y = partials[j];
            if (fabs(x) < fabs(y)) {
                double t = x;
                x = y;
                y = t;
            }
            double hi = x + y;
            double lo = y - (hi - x);
            if (lo != 0.0) partials[i++] = lo;
            x = hi;
        }
        m = i;
        if (x != 0.0 && m < 64) partials[m++] = x;
    }
    double hi = 0.0;
    if (m > 0) {
        hi = partials[--m];
        double lo = 0.0;
        while (m > 0) {
            double x = hi;
            double y = partials[--m];
            hi = x + y;
            double yr = hi - x;
            lo = y - yr;
            if (lo != 0.0) break;
        }
        if (m > 0 && ((lo < 0.0 && partials[m - 1] < 0.0) || (lo > 0.0 && partials[m - 1] > 0.0))) {
            double y = lo * 2.0;
            double x = hi + y;
            double yr = x - hi;
            if (y == yr) hi = x;
        }
    }
    return hi;
}

/* -- Welford, for lg_learn (GaussianNB's own per-event path is streamnb/stats/cells.py) ----- */

/* Chan's step for one event of weight w on a cell of weight n_a: n = n_a + w, frac = w / n,
 * kk = n_a * frac. The cells of a dense event mostly share n_a: the last step is kept and
 * reused when n_a has the same bits (the same operations on the same operands: the same
 * results, without a division per cell). */
typedef struct {
    double w, n_a, n, frac, kk;
    int have;
} step_t;

static inline void chan_step(step_t *st, double n_a) {
    if (!st->have || memcmp(&n_a, &st->n_a, sizeof(double)) != 0) {
        st->n_a = n_a;
        st->n = n_a + st->w;
        st->frac = st->w / st->n;
        st->kk = n_a * st->frac;
        st->have = 1;
    }
}

/* lg_learn's first arguments, args[0..16]. */
typedef struct {
    PyObject *x, *ids, *spread, *exclude;
    view_t N, M, S, PN, PM, PS;
    Py_ssize_t n0, n1, k, p1, top_id;
    double w, top;
    int has_top;
} welford_t;

/* Parse lg_learn's first arguments: 1, 0 if the event is not for the compiled path (a weight
 * that is not positive and finite, no feature), -1 error. */
static int get_welford(PyObject *const *args, welford_t *a) {
    a->x = args[0], a->ids = args[1], a->spread = args[13], a->exclude = args[16];
    PyObject *top_obj = args[14];
    a->top = 0.0;
    if (check_dict(a->x, "event") || check_dict(a->ids, "ids") || get_view(args[2], &a->N) ||
        get_view(args[3], &a->M) || get_view(args[4], &a->S) || get_index(args[5], &a->n0) ||
        get_index(args[6], &a->n1) || get_index(args[7], &a->k) || get_double(args[8], &a->w) ||
        get_view(args[9], &a->PN) || get_view(args[10], &a->PM) || get_view(args[11], &a->PS) ||
        get_index(args[12], &a->p1) || get_index(args[15], &a->top_id))
        return -1;
    if (!PyList_Check(a->spread)) {
        PyErr_SetString(PyExc_TypeError, "expected a list (spread)");
        return -1;
    }
    a->has_top = top_obj != Py_None;
    if (a->has_top && get_double(top_obj, &a->top)) return -1;
    if (!(a->w > 0) || !isfinite(a->w) || PyDict_GET_SIZE(a->x) == 0) return 0;
    if (a->exclude != Py_None && check_dict(a->exclude, "exclude")) return -1;
    return 1;
}

static int welford_cells(const welford_t *a, const event_t *e, Py_ssize_t from);

/* Read the event of ``a`` into ``e`` (initialized) and check every cell it touches before
 * anything changes: 1, 0 not plain or a feature without its ``spread`` entry yet (the Python
 * path), -1 error. */
static int welford_read(const welford_t *a, event_t *e) {
    int ok = read_numeric_except(a->x, a->ids, a->exclude, 0, 1, e);
    if (ok <= 0) return ok;
    return welford_cells(a, e, 0);
}

/* welford_read's check of the cells of the entries of ``e`` from ``from`` on. */
static int welford_cells(const welford_t *a, const event_t *e, Py_ssize_t from) {
    Py_ssize_t base = a->k * a->n0, n_spread = PyList_GET_SIZE(a->spread);
    for (Py_ssize_t f = from; f < e->n; f++) {
        Py_ssize_t j = e->id[f], i = base + j * a->n1, q = j * a->p1;
        IN(a->N, i);
        IN(a->M, i);
        IN(a->S, i);
        IN(a->PN, q);
        IN(a->PM, q);
        IN(a->PS, q);
        if (j >= n_spread) return 0;
    }
    return 1;
fail:
    return -1;
}

/* The new values of one entry's cells (welford_update's first pass). */
typedef struct {
    double m, s, n, pm, ps, pn;
} welford_new_t;

/* GaussianPart.learn_one's update of a read, checked event: the Welford update of the class's
 * cells and of each feature's pooled cell (Chan's formula for one event), and for the first
 * ``tracked`` entries (the features; not the log slots after them) the feature's pooled M2 / n
 * written into ``spread`` and the running maximum of ``spread`` kept in ``a`` (has_top 0: to
 * be recounted). The ids of ``e`` are distinct (an event's keys), so its cells are too.
 *
 * Nothing changes before an error: the first pass computes every new value and allocates the
 * ``spread`` floats, writing nothing; the second writes them. 0, or -1 with an exception set
 * (out of memory, or ``spread`` not a list long enough) and nothing changed. */
static int welford_update(welford_t *a, const event_t *e, Py_ssize_t tracked) {
    Py_ssize_t base = a->k * a->n0, n = e->n, done = 0;
    if (tracked > n) tracked = n;
    if (!PyList_Check(a->spread)) {
        PyErr_SetString(PyExc_TypeError, "expected a list (spread)");
        return -1;
    }
    welford_new_t small_new[SMALL];
    PyObject *small_new_f[SMALL], *small_old_f[SMALL];
    welford_new_t *nv = small_new;
    PyObject **fresh = small_new_f, **old = small_old_f;
    if (n > SMALL) {
        nv = PyMem_Malloc(n * sizeof(welford_new_t));
        fresh = PyMem_Malloc(n * sizeof(PyObject *));
        old = PyMem_Malloc(n * sizeof(PyObject *));
        if (nv == NULL || fresh == NULL || old == NULL) {
            PyMem_Free(nv);
            PyMem_Free(fresh);
            PyMem_Free(old);
            PyErr_NoMemory();
            return -1;
        }
    }
    int result = -1;
    Py_ssize_t made = 0; /* fresh[0..made) hold new references */
    double top = a->top;
    Py_ssize_t top_id = a->top_id;
    int has_top = a->has_top;
    /* 1: the new values, and the spread's floats; nothing written */
    step_t cls = {a->w, 0.0, 0.0, 0.0, 0.0, 0}, pool = {a->w, 0.0, 0.0, 0.0, 0.0, 0};
    for (Py_ssize_t f = 0; f < n; f++) {
        Py_ssize_t j = e->id[f];
        double xv = e->x[f];
        Py_ssize_t i = base + j * a->n1;
        double n_a = a->N.p[i];
        chan_step(&cls, n_a);
        double delta = xv - a->M.p[i];
        nv[f].m = a->M.p[i] + delta * cls.frac;
        nv[f].s = a->S.p[i] + delta * delta * n_a * cls.frac;
        nv[f].n = cls.n;
        i = j * a->p1;
        n_a = a->PN.p[i];
        chan_step(&pool, n_a);
        delta = xv - a->PM.p[i];
        nv[f].pm = a->PM.p[i] + delta * pool.frac;
        double m2 = nv[f].ps = a->PS.p[i] + delta * delta * n_a * pool.frac;
        nv[f].pn = pool.n;
        if (f >= tracked) continue;
        if (j < 0 || j >= PyList_GET_SIZE(a->spread)) {
            PyErr_SetString(PyExc_IndexError, "streamnb kernel: feature outside its spread");
            goto out;
        }
        double s = m2 / pool.n;
        if ((fresh[f] = PyFloat_FromDouble(s)) == NULL) goto out;
        made++;
        if (has_top) {
            if (s >= top) {
                top = s;
                top_id = j;
            } else if (j == top_id) {
                has_top = 0;
            }
        }
    }
    /* 2: the spread entries (PyList_SetItem cannot fail here: a list, ids inside it; if it
     * did, the entries replaced so far are put back), then the cells */
    for (; done < tracked; done++) {
        Py_ssize_t j = e->id[done];
        old[done] = PyList_GET_ITEM(a->spread, j);
        Py_INCREF(old[done]);
        PyObject *item = fresh[done];
        fresh[done] = NULL; /* stolen, even on failure */
        if (PyList_SetItem(a->spread, j, item) < 0) {
            Py_DECREF(old[done]);
#if PY_VERSION_HEX >= 0x030C0000
            PyObject *exc = PyErr_GetRaisedException();
#else
            PyObject *type, *exc, *tb;
            PyErr_Fetch(&type, &exc, &tb);
#endif
            while (done-- > 0) /* back as it was: the list takes old[done] back */
                PyList_SetItem(a->spread, e->id[done], old[done]);
#if PY_VERSION_HEX >= 0x030C0000
            PyErr_SetRaisedException(exc);
#else
            PyErr_Restore(type, exc, tb);
#endif
            done = 0;
            goto out;
        }
    }
    for (Py_ssize_t f = 0; f < n; f++) {
        Py_ssize_t j = e->id[f], i = base + j * a->n1, q = j * a->p1;
        a->M.p[i] = nv[f].m;
        a->S.p[i] = nv[f].s;
        a->N.p[i] = nv[f].n;
        a->PM.p[q] = nv[f].pm;
        a->PS.p[q] = nv[f].ps;
        a->PN.p[q] = nv[f].pn;
    }
    a->top = top;
    a->top_id = top_id;
    a->has_top = has_top;
    result = 0;
out:
    for (Py_ssize_t f = 0; f < made; f++) Py_XDECREF(fresh[f]);
    for (Py_ssize_t f = 0; f < done; f++) Py_DECREF(old[f]); /* the replaced entries, last */
    if (nv != small_new) {
        PyMem_Free(nv);
        PyMem_Free(fresh);
        PyMem_Free(old);
    }
    return result;
}

/* (top, top_id), top None if it must be recounted. */
static PyObject *welford_result(const welford_t *a) {
    if (a->has_top) return Py_BuildValue("(dn)", a->top, a->top_id);
    return Py_BuildValue("(On)", Py_None, a->top_id);
}

/* -- tables (the conditional linear Gaussians' statistics) -------------------------------- */

/* A statistic's array: a flat view and its element strides, given as (view, s0, s1[, s2]). */
typedef struct {
    view_t v;
    Py_ssize_t s[3];
} table_t;

static int get_table(PyObject *obj, int dims, table_t *t) {
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != dims + 1) {
        PyErr_Format(PyExc_TypeError, "expected (view, %d strides)", dims);
        return -1;
    }
    if (get_view(PyTuple_GET_ITEM(obj, 0), &t->v)) return -1;
    t->s[2] = 0;
    for (int i = 0; i < dims; i++) {
        if (get_index(PyTuple_GET_ITEM(obj, i + 1), &t->s[i])) return -1;
        if (t->s[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "negative stride");
            return -1;
        }
    }
    return 0;
}

/* Whether the cell at the largest ids is inside the array (strides are >= 0). */
static int fits(const table_t *t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t c) {
    Py_ssize_t i = a * t->s[0] + b * t->s[1] + c * t->s[2];
    if (a < 0 || b < 0 || c < 0 || i >= t->v.n) {
        PyErr_SetString(PyExc_IndexError, "streamnb kernel: cell outside its statistic");
        return 0;
    }
    return 1;
}

static inline double at3(const table_t *t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t c) {
    return t->v.p[a * t->s[0] + b * t->s[1] + c * t->s[2]];
}

static inline double *ref3(table_t *t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t c) {
    return t->v.p + a * t->s[0] + b * t->s[1] + c * t->s[2];
}

/* -- conditional linear Gaussians (TAN's numeric part) ------------------------------------- */

#define PRIOR 1.0     /* streamnb.bn.linear_gaussian.PRIOR */
#define TINY 1e-300   /* streamnb.bn.linear_gaussian._TINY */

/* The co-moment update of the event ``e`` (ids all known) in class k: the pairs of features
 * with id < limit (e is compacted to them). 0 done, -1 a cell outside its table (nothing
 * changed). */
static int comoment_update(event_t *e, Py_ssize_t k, double w, Py_ssize_t limit, table_t *N, table_t *M,
                           table_t *S, table_t *C) {
    Py_ssize_t d = 0, amax = 0;
    for (Py_ssize_t i = 0; i < e->n; i++) { /* features past the limit have no co-moments */
        if (e->id[i] < limit) {
            e->id[d] = e->id[i];
            e->x[d] = e->x[i];
            if (e->id[d] > amax) amax = e->id[d];
            d++;
        }
    }
    e->n = d;
    if (d && (!fits(N, k, amax, amax) || !fits(M, k, amax, amax) || !fits(S, k, amax, amax) ||
              !fits(C, k, amax, amax)))
        return -1;
    step_t st = {w, 0.0, 0.0, 0.0, 0.0, 0};
    int same = 1; /* the four tables share their strides (they do: one shape): offsets once */
    for (int q = 0; q < 3; q++)
        same &= N->s[q] == M->s[q] && N->s[q] == S->s[q] && N->s[q] == C->s[q];
    Py_ssize_t small_row[SMALL], small_col[SMALL]; /* cell (a, b) of class k: row[a] + col[b] */
    Py_ssize_t *row = d <= SMALL ? small_row : PyMem_Malloc(d * sizeof(Py_ssize_t));
    Py_ssize_t *col = d <= SMALL ? small_col : PyMem_Malloc(d * sizeof(Py_ssize_t));
    if (row == NULL || col == NULL) { /* no room for the offsets: cell by cell below */
        if (row != small_row) PyMem_Free(row);
        if (col != small_col) PyMem_Free(col);
        same = 0;
    }
    if (same) {
        for (Py_ssize_t i = 0; i < d; i++) {
            row[i] = k * N->s[0] + e->id[i] * N->s[1];
            col[i] = e->id[i] * N->s[2];
        }
        double *Np = N->v.p, *Mp = M->v.p, *Sp = S->v.p, *Cp = C->v.p;
        for (Py_ssize_t i = 0; i < d; i++) {
            double xa = e->x[i];
            for (Py_ssize_t j = i; j < d; j++) {
                Py_ssize_t ab = row[i] + col[j];
                chan_step(&st, Np[ab]);
                double n = st.n, frac = st.frac, kk = st.kk;
                if (j == i) {
                    double da = xa - Mp[ab];
                    Mp[ab] += da * frac;
                    Sp[ab] += da * da * kk;
                    Cp[ab] += da * da * kk;
                    Np[ab] = n;
                } else {
                    Py_ssize_t ba = row[j] + col[i];
                    double dab = xa - Mp[ab], dba = e->x[j] - Mp[ba];
                    Mp[ab] += dab * frac;
                    Mp[ba] += dba * frac;
                    Sp[ab] += dab * dab * kk;
                    Sp[ba] += dba * dba * kk;
                    Cp[ab] += dab * dba * kk;
                    Cp[ba] += dba * dab * kk;
                    Np[ab] = n;
                    Np[ba] = n;
                }
            }
        }
        if (row != small_row) PyMem_Free(row);
        if (col != small_col) PyMem_Free(col);
        return 0;
    }
    for (Py_ssize_t i = 0; i < d; i++) {
        Py_ssize_t a = e->id[i];
        double xa = e->x[i];
        for (Py_ssize_t j = i; j < d; j++) {
            Py_ssize_t b = e->id[j];
            double *nab = ref3(N, k, a, b);
            chan_step(&st, *nab);
            double n = st.n, frac = st.frac, kk = st.kk;
            if (j == i) {
                double *m = ref3(M, k, a, a), da = xa - *m;
                *m += da * frac;
                *ref3(S, k, a, a) += da * da * kk;
                *ref3(C, k, a, a) += da * da * kk;
                *nab = n;
            } else {
                double *mab = ref3(M, k, a, b), *mba = ref3(M, k, b, a);
                double dab = xa - *mab, dba = e->x[j] - *mba;
                *mab += dab * frac;
                *mba += dba * frac;
                *ref3(S, k, a, b) += dab * dab * kk;
                *ref3(S, k, b, a) += dba * dba * kk;
                *ref3(C, k, a, b) += dab * dba * kk;
                *ref3(C, k, b, a) += dba * dab * kk;
                *nab = n;
                *ref3(N, k, b, a) = n;
            }
        }
    }
    return 0;
}

/* comoment_add(x, ids, k, w, limit, CN, CM, CS, CC) -> True | None
 * CoMoments.update_ids for an event of plain numbers whose features are all known: for the
 * features with id < limit, every pair (a, b) of class k gets Chan's update for one event,
 * n += w, mean += d_ab w / n, m2 += d_ab**2 n_a w / n, c += d_ab d_ba n_a w / n with
 * d_ab = x_a - mean[k, a, b] (the same operations as the numpy update, cell by cell). Tables:
 * (view, s0, s1, s2). None, touching nothing, if the event is not plain. */
static PyObject *comoment_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_NARGS(9);
    PyObject *x = args[0], *ids = args[1];
    Py_ssize_t k, limit;
    double w;
    table_t N, M, S, C;
    if (check_dict(x, "event") || check_dict(ids, "ids") || get_index(args[2], &k) || get_double(args[3], &w) ||
        get_index(args[4], &limit) || get_table(args[5], 3, &N) || get_table(args[6], 3, &M) ||
        get_table(args[7], 3, &S) || get_table(args[8], 3, &C))
        return NULL;
    if (!(w > 0) || !isfinite(w)) Py_RETURN_NONE;
    event_t e;
    if (event_init(&e, PyDict_GET_SIZE(x))) return NULL;
    int ok = read_numeric(x, ids, 0, 1, &e);
    if (ok <= 0) {
        event_free(&e);
        if (ok < 0) return NULL;
        Py_RETURN_NONE;
    }
    int bad = comoment_update(&e, k, w, limit, &N, &M, &S, &C);
    event_free(&e);
    if (bad) return NULL;
    Py_RETURN_TRUE;
}

/* The log slots of TAN's numeric features (streamnb.bn.scales): ``scales`` is None (no log
 * slots) or bytes (or a bytearray), one per feature id: 0 no log slot (or the id is a log
 * slot), 1 the feature has its log slot at id + 1 and stands on its linear scale, 2 it stands
 * on its log scale. */
static int get_scales(PyObject *obj, const char **s, Py_ssize_t *n) {
    *s = NULL;
    *n = 0;
    if (obj == Py_None) return 0;
    if (PyByteArray_Check(obj)) {
        *s = PyByteArray_AS_STRING(obj);
        *n = PyByteArray_GET_SIZE(obj);
        return 0;
    }
    if (!PyBytes_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "expected bytes or a bytearray (scales)");
        return -1;
    }
    *s = PyBytes_AS_STRING(obj);
    *n = PyBytes_GET_SIZE(obj);
    return 0;
}

/* Learning: after the read entries of ``e`` (room for twice as many), each value >= 0 of a
 * feature with a log slot as (id + 1, log1p(value)), in the order read, while the slot has the
 * feature's pooled weight (no value below 0 yet; after one the slot holds nothing and learns
 * nothing, its feature never leaves the linear scale): LinearGaussianPart._with_logs. 1, or 0
 * (the Python path) if a feature is newer than ``s``, its slot is outside the pooled
 * statistics, or its first value below 0 is here (the Python path empties the slot). */
static int add_log_slots(event_t *e, const char *s, Py_ssize_t ns, const welford_t *a) {
    if (s == NULL) return 1;
    Py_ssize_t n = e->n;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = e->id[i];
        if (j >= ns) return 0;
        if (!s[j]) continue;
        Py_ssize_t q = (j + 1) * a->p1;
        if (q >= a->PN.n) return 0;
        double slot = a->PN.p[q], feature = a->PN.p[j * a->p1];
        if (slot < feature) continue; /* emptied: a value below 0 came before */
        if (e->x[i] >= 0) {
            e->id[e->n] = j + 1;
            e->x[e->n] = log1p(e->x[i]);
            e->n++;
        } else if (feature > 0) {
            return 0;
        }
    }
    return 1;
}

/* Predicting: each feature on its log scale read as its log slot, (id + 1, log1p(value)), with
 * ``jac`` log1p(value) (the log of the transform's derivative's inverse), or dropped if its
 * value is below 0 (outside that scale); ``jac`` 0 for the others: LinearGaussianPart._on_scales.
 * 1, or 0 if a feature is newer than ``s`` (the Python path). */
static int use_log_slots(event_t *e, const char *s, Py_ssize_t ns, double *jac) {
    Py_ssize_t d = 0;
    for (Py_ssize_t i = 0; i < e->n; i++) {
        Py_ssize_t j = e->id[i];
        double v = e->x[i];
        double t = 0.0;
        if (s != NULL) {
            if (j >= ns) return 0;
            if (s[j] == 2) {
                if (!(v >= 0)) continue;
                j += 1;
                v = t = log1p(v);
            }
        }
        e->id[d] = j;
        e->x[d] = v;
        jac[d] = t;
        d++;
    }
    e->n = d;
    return 1;
}

/* lg_learn(x, ids, N, M, S, n0, n1, k, w, PN, PM, PS, p1, spread, top, top_id, exclude,
 *          limit, CN, CM, CS, CC, scales) -> (top, top_id) | None
 * LinearGaussianPart.learn_one for an event of plain numbers whose features are all known, in
 * one call: the event with its log slots (add_log_slots), GaussianPart.learn_one's update
 * (welford_update; the log slots' spread is not the variance smoothing's), then comoment_add's
 * co-moments (comoment_update). None, touching nothing, otherwise. */
static PyObject *lg_learn(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_NARGS(23);
    welford_t a;
    table_t CN, CM, CS, CC;
    Py_ssize_t limit, ns;
    const char *scales;
    int ok = get_welford(args, &a);
    if (ok < 0 || get_index(args[17], &limit) || get_table(args[18], 3, &CN) || get_table(args[19], 3, &CM) ||
        get_table(args[20], 3, &CS) || get_table(args[21], 3, &CC) || get_scales(args[22], &scales, &ns))
        return NULL;
    if (ok == 0) Py_RETURN_NONE;
    event_t e;
    if (event_init(&e, 2 * PyDict_GET_SIZE(a.x))) return NULL;
    ok = welford_read(&a, &e);
    Py_ssize_t read = e.n;
    if (ok > 0) {
        ok = add_log_slots(&e, scales, ns, &a);
        if (ok > 0) ok = welford_cells(&a, &e, read);
    }
    if (ok > 0) {
        Py_ssize_t cmax = -1;
        for (Py_ssize_t f = 0; f < e.n; f++)
            if (e.id[f] < limit && e.id[f] > cmax) cmax = e.id[f];
        if (cmax >= 0 && (!fits(&CN, a.k, cmax, cmax) || !fits(&CM, a.k, cmax, cmax) ||
                          !fits(&CS, a.k, cmax, cmax) || !fits(&CC, a.k, cmax, cmax)))
            ok = -1;
    }
    if (ok > 0 && (welford_update(&a, &e, read) < 0 || comoment_update(&e, a.k, a.w, limit, &CN, &CM, &CS, &CC)))
        ok = -1; /* (the co-moment cells were checked above) */
    event_free(&e);
    if (ok < 0) return NULL;
    if (ok == 0) Py_RETURN_NONE;
    return welford_result(&a);
}

/* LinearGaussianPart._root: mean and variance of feature j in class k; 0 if no estimate. */
static int lg_root(Py_ssize_t k, Py_ssize_t j, double eps, const table_t *W[3], const table_t *P[3], double *mean,
                   double *var) {
    double n = at3(W[0], k, j, 0);
    if (n > 0) {
        *mean = at3(W[1], k, j, 0);
        double v = at3(W[2], k, j, 0) / n + eps;
        *var = TINY > v ? TINY : v; /* Python's max(v, TINY) */
        return 1;
    }
    double pn = at3(P[0], 0, j, 0);
    if (pn > 0) {
        *mean = at3(P[1], 0, j, 0);
        double v = at3(P[2], 0, j, 0) / pn + eps;
        *var = TINY > v ? TINY : v; /* Python's max(v, TINY) */
        return 1;
    }
    return 0;
}

/* lg_joint(x, ids, parents, exclude, WN, WM, WS, PN, PM, PS, CN, CM, CS, CC, eps, n_classes, scales)
 *     -> list | None
 * LinearGaussianPart.joint_one through terms_one, for an event of plain numbers in which every
 * known feature has its parent observed (nothing to integrate out) and no categorical parent:
 * per class the exact sum (math.fsum) of log N(x_j; a + b x_p, s2) over the features with a
 * numeric parent p (the least-squares line of x_j on x_p and its shrunk residual variance) and
 * log N(x_j; mean, var) over the roots. ``parents``: per feature id, -1 (the class only), -2 (a
 * categorical parent) or the parent's id, by slot (a feature on its log scale is its log slot,
 * use_log_slots, whose term is the log density of x: that of log1p(x) less log1p(x)). W*:
 * Welford (view, n0, n1), P*: pooled (view, 0, p1), C*: co-moments (view, s0, s1, s2). */
static PyObject *lg_joint(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_NARGS(17);
    PyObject *x = args[0], *ids = args[1], *parents = args[2], *exclude = args[3];
    table_t WN, WM, WS, PN, PM, PS, CN, CM, CS, CC;
    double eps;
    Py_ssize_t Cn, ns;
    const char *scales;
    if (check_dict(x, "event") || check_dict(ids, "ids") || (exclude != Py_None && check_dict(exclude, "exclude")) ||
        get_table(args[4], 2, &WN) || get_table(args[5], 2, &WM) || get_table(args[6], 2, &WS) ||
        get_table(args[7], 2, &PN) || get_table(args[8], 2, &PM) || get_table(args[9], 2, &PS) ||
        get_table(args[10], 3, &CN) || get_table(args[11], 3, &CM) || get_table(args[12], 3, &CS) ||
        get_table(args[13], 3, &CC) || get_double(args[14], &eps) || get_index(args[15], &Cn) ||
        get_scales(args[16], &scales, &ns))
        return NULL;
    if (!PyList_Check(parents)) {
        PyErr_SetString(PyExc_TypeError, "expected a list (parents)");
        return NULL;
    }
    Py_ssize_t size = PyDict_GET_SIZE(x), n_pa = PyList_GET_SIZE(parents);
    if (Cn < 1 || Cn > MAX_CLASSES || size == 0) Py_RETURN_NONE;
    event_t e;
    if (event_init(&e, size)) return NULL;
    Py_ssize_t small_par[SMALL];
    double small_parx[SMALL], small_terms[SMALL], small_jac[SMALL];
    int heap = size > SMALL;
    Py_ssize_t *par = heap ? PyMem_Malloc(size * sizeof(Py_ssize_t)) : small_par;
    double *parx = heap ? PyMem_Malloc(size * sizeof(double)) : small_parx;
    double *terms = heap ? PyMem_Malloc(size * sizeof(double)) : small_terms;
    double *jac = heap ? PyMem_Malloc(size * sizeof(double)) : small_jac;
    PyObject *result = NULL;
    int ok = 1;
    if (par == NULL || parx == NULL || terms == NULL || jac == NULL) {
        PyErr_NoMemory();
        ok = -1;
        goto out;
    }
    ok = read_numeric_except(x, ids, exclude, 0, 0, &e);
    if (ok > 0) ok = use_log_slots(&e, scales, ns, jac);
    if (ok <= 0) goto out;
    Py_ssize_t amax = 0, cmax = -1; /* the largest id, and the largest id of a pair (j, p) */
    for (Py_ssize_t i = 0; i < e.n; i++) { /* each feature's parent: observed, or the class */
        Py_ssize_t j = e.id[i];
        if (j >= n_pa) {
            ok = 0;
            goto out;
        }
        Py_ssize_t p = PyLong_AsSsize_t(PyList_GET_ITEM(parents, j));
        if (p == -1 && PyErr_Occurred()) {
            ok = -1;
            goto out;
        }
        if (p < -1) { /* a categorical parent: its part has this term */
            ok = 0;
            goto out;
        }
        par[i] = p;
        if (p >= 0) {
            Py_ssize_t q = 0;
            while (q < e.n && e.id[q] != p) q++;
            if (q == e.n) { /* the parent is missing: integrated out on the Python path */
                ok = 0;
                goto out;
            }
            parx[i] = e.x[q];
            if (p > amax) amax = p;
            if (p > cmax) cmax = p;
            if (j > cmax) cmax = j;
        }
        if (j > amax) amax = j;
    }
    const table_t *W[3] = {&WN, &WM, &WS}, *P[3] = {&PN, &PM, &PS};
    if (!fits(&WN, Cn - 1, amax, 0) || !fits(&WM, Cn - 1, amax, 0) || !fits(&WS, Cn - 1, amax, 0) ||
        !fits(&PN, 0, amax, 0) || !fits(&PM, 0, amax, 0) || !fits(&PS, 0, amax, 0) ||
        (cmax >= 0 && (!fits(&CN, Cn - 1, cmax, cmax) || !fits(&CM, Cn - 1, cmax, cmax) ||
                       !fits(&CS, Cn - 1, cmax, cmax) || !fits(&CC, Cn - 1, cmax, cmax)))) {
        ok = -1; /* (strides are >= 0: every cell read below is at most the largest checked) */
        goto out;
    }
    double out[MAX_CLASSES];
    for (Py_ssize_t k = 0; k < Cn; k++) {
        for (Py_ssize_t i = 0; i < e.n; i++) {
            Py_ssize_t j = e.id[i], p = par[i];
            double mean, var;
            if (p < 0) {
                if (!lg_root(k, j, eps, W, P, &mean, &var)) {
                    terms[i] = 0.0;
                    continue;
                }
            } else {
                double n = at3(&CN, k, j, p);
                if (n <= 0) { /* LinearGaussianPart._line without co-observed events */
                    if (!lg_root(k, j, eps, W, P, &mean, &var)) {
                        mean = 0.0;
                        var = 1.0;
                    }
                    mean = mean + 0.0 * parx[i];
                } else {
                    double wn = at3(&WN, k, j, 0);
                    double v_j = wn > 0 ? at3(&WS, k, j, 0) / wn : 0.0;
                    double spp = at3(&CS, k, p, j), cjp = at3(&CC, k, j, p);
                    double b = spp > 0 ? cjp / spp : 0.0;
                    double a = at3(&CM, k, j, p) - b * at3(&CM, k, p, j);
                    double rss = at3(&CS, k, j, p) - b * cjp;
                    if (0.0 > rss) rss = 0.0; /* max(rss, 0.0) */
                    double v = (rss + PRIOR * v_j) / (n + PRIOR) + eps;
                    var = TINY > v ? TINY : v;
                    mean = a + b * parx[i];
                }
            }
            double dv = e.x[i] - mean;
            terms[i] = -0.5 * (LOG_2PI + log(var) + dv * dv / var) - jac[i];
        }
        out[k] = fsum(terms, e.n);
    }
    result = float_list(out, Cn);
out:
    if (heap) {
        PyMem_Free(par);
        PyMem_Free(parx);
        PyMem_Free(terms);
        PyMem_Free(jac);
    }
    event_free(&e);
    if (result != NULL || ok < 0 || PyErr_Occurred()) return result;
    Py_RETURN_NONE;
}

/* -- the module -------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"comoment_add", (PyCFunction)(void (*)(void))comoment_add, METH_FASTCALL,
     "comoment_add(x, ids, k, w, limit, CN, CM, CS, CC)"},
    {"lg_learn", (PyCFunction)(void (*)(void))lg_learn, METH_FASTCALL,
     "lg_learn(x, ids, N, M, S, n0, n1, k, w, PN, PM, PS, p1, spread, top, top_id, exclude, limit, CN, CM, CS, CC, "
     "scales)"},
    {"lg_joint", (PyCFunction)(void (*)(void))lg_joint, METH_FASTCALL,
     "lg_joint(x, ids, parents, exclude, WN, WM, WS, PN, PM, PS, CN, CM, CS, CC, eps, n_classes, scales)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "streamnb._kernels",
    "The per-event path of the naive Bayes parts in C (see the source's header).", -1, methods,
};

#ifndef STREAMNB_KERNELS_SHA256
#define STREAMNB_KERNELS_SHA256 "unknown"
#endif

PyMODINIT_FUNC PyInit__kernels(void) {
    PyObject *m = PyModule_Create(&module);
    /* the SHA-256 of this source, as setup.py built it: streamnb.kernels uses the module only
       if it matches the source beside it (a build of another checkout is not loaded) */
    if (m != NULL && PyModule_AddStringConstant(m, "SOURCE_SHA256", STREAMNB_KERNELS_SHA256) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
