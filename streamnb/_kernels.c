/* The per-event path of the naive Bayes parts in C: one event in, the cells of that event read
 * or updated, nothing else touched.
 *
 * Being retired: GaussianNB, MultinomialNB and CategoricalNB already run streamnb/stats/cells.py,
 * and the numeric tree (Welford and co-moments) streamnb/stats/moment_cells.py, plain Python
 * sources that Cython compiles; the parts here move there statistic by statistic.
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

/* -- categories (the tree learners' events) ---------------------------------------------- */

/* Whether (key, value) is a plain category: a str key not in ``exclude`` (a dict, or None),
 * and a str value, or an int (not a bool) unless ``strings_only`` (a learner that decides a
 * feature's kind from its value takes ints as numbers). 0 with an exception set on error. */
static int plain_category(PyObject *key, PyObject *value, PyObject *exclude, int strings_only) {
    if (!PyUnicode_CheckExact(key)) return 0;
    if (!(PyUnicode_CheckExact(value) || (!strings_only && PyLong_CheckExact(value)))) return 0;
    if (exclude != Py_None) {
        int in = PyDict_Contains(exclude, key);
        if (in != 0) return 0; /* in it, or an error (set) */
    }
    return 1;
}

/* -- tree-augmented learners (TAN, per-class Chow-Liu) ----------------------------------- */

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

/* t log t with 0 log 0 = 0 (streamnb.structure.information.xlogx); counts are mostly whole
 * numbers, whose values are tabulated up to XLOGX_TABLE (computed by the same expression). */
#define XLOGX_TABLE 65536
static double xlogx_table[XLOGX_TABLE];

static void xlogx_init(void) {
    xlogx_table[0] = 0.0;
    for (int i = 1; i < XLOGX_TABLE; i++) xlogx_table[i] = log((double)i) * (double)i;
}

static inline double xlogx(double t) {
    if (t >= 0 && t < XLOGX_TABLE) {
        int i = (int)t;
        if ((double)i == t) return xlogx_table[i];
    }
    return t > 0 ? log(t) * t : 0.0;
}

/* Read a tree learner's event: plain categories (see plain_category), every cell known. The
 * cell ids and their feature ids (``cf[cell]``). 1 plain, 0 not plain, -1 error. */
static int read_tree_event(PyObject *x, PyObject *cell_ids, PyObject *cf, PyObject *exclude, int strings_only,
                           event_t *e, Py_ssize_t *fids) {
    Py_ssize_t pos = 0, n_cf = PyList_GET_SIZE(cf);
    PyObject *key, *value;
    while (PyDict_Next(x, &pos, &key, &value)) {
        if (!plain_category(key, value, exclude, strings_only)) return PyErr_Occurred() ? -1 : 0;
        PyObject *cell = PyTuple_Pack(2, key, value);
        if (cell == NULL) return -1;
        Py_ssize_t cid = lookup(cell_ids, cell);
        Py_DECREF(cell);
        if (cid == -2) return -1;
        if (cid < 0 || cid >= n_cf) return 0; /* a value never seen (or not in the margins yet) */
        Py_ssize_t j = PyLong_AsSsize_t(PyList_GET_ITEM(cf, cid));
        if (j == -1 && PyErr_Occurred()) return -1;
        e->id[e->n] = cid;
        fids[e->n] = j;
        e->n++;
    }
    return 1;
}

/* The sums one event changes (CMISums.tables()): S_joint, S_marg, GL (t log t of the margins),
 * P (pair totals), PL (t log t of P). */
typedef struct {
    int on;
    table_t SJ, SM, GL, P, PL;
} sums_t;

static int get_sums(PyObject *obj, sums_t *s) {
    s->on = obj != Py_None;
    if (!s->on) return 0;
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 5) {
        PyErr_SetString(PyExc_TypeError, "expected sums as 5 tables");
        return -1;
    }
    return get_table(PyTuple_GET_ITEM(obj, 0), 3, &s->SJ) || get_table(PyTuple_GET_ITEM(obj, 1), 3, &s->SM) ||
           get_table(PyTuple_GET_ITEM(obj, 2), 3, &s->GL) || get_table(PyTuple_GET_ITEM(obj, 3), 3, &s->P) ||
           get_table(PyTuple_GET_ITEM(obj, 4), 3, &s->PL);
}

/* Learn one event of class k and weight w whose cells are ids[0..d) (distinct, registered) of
 * features fids: the pair counts n[k, a, b] += w for every two of its cells, the normalizers
 * D[k, f(a), b] += w and T[k, f(a)] += w (Margins.add_event), and, with sums, the entropy sums
 * where they changed: S_joint[k, f(a), f(b)] += xlogx(n) - xlogx(n - w); S_marg[k, f(b), f(a)]
 * over D (its old t log t kept in GL); P[k, f(a), f(b)] += w, PL = xlogx(P). Every cell is
 * checked to lie inside its array before anything changes. 1 done, -1 error. */
static int tree_update(const Py_ssize_t *ids, const Py_ssize_t *fids, Py_ssize_t d, Py_ssize_t k, double w,
                       table_t *N, table_t *D, table_t *T, sums_t *S) {
    Py_ssize_t amax = 0, fmax = 0;
    for (Py_ssize_t i = 0; i < d; i++) {
        if (ids[i] < 0 || fids[i] < 0) {
            PyErr_SetString(PyExc_IndexError, "streamnb kernel: negative cell or feature id");
            return -1;
        }
        if (ids[i] > amax) amax = ids[i];
        if (fids[i] > fmax) fmax = fids[i];
    }
    if (!fits(N, k, amax, amax) || !fits(D, k, fmax, amax) || !fits(T, k, fmax, 0)) return -1;
    if (S->on && (!fits(&S->SJ, k, fmax, fmax) || !fits(&S->SM, k, fmax, fmax) || !fits(&S->GL, k, fmax, amax) ||
                  !fits(&S->P, k, fmax, fmax) || !fits(&S->PL, k, fmax, fmax)))
        return -1;
    /* the pair table is symmetric: each unordered pair once, mirrored */
    for (Py_ssize_t i = 0; i < d; i++) {
        Py_ssize_t a = ids[i], fa = fids[i];
        for (Py_ssize_t j = i; j < d; j++) {
            Py_ssize_t b = ids[j], fb = fids[j];
            double *n = ref3(N, k, a, b), old = *n, now = old + w;
            *n = now;
            if (j != i) *ref3(N, k, b, a) = now;
            if (S->on) {
                double delta = xlogx(now) - xlogx(old);
                *ref3(&S->SJ, k, fa, fb) += delta;
                double *p = ref3(&S->P, k, fa, fb), pt = *p + w, px = xlogx(pt);
                *p = pt;
                *ref3(&S->PL, k, fa, fb) = px;
                if (j != i) {
                    *ref3(&S->SJ, k, fb, fa) += delta;
                    *ref3(&S->P, k, fb, fa) = pt;
                    *ref3(&S->PL, k, fb, fa) = px;
                }
            }
        }
    }
    /* the margins D[k, ., b] of a cell mostly take one value across an event's features (every
     * one, when nothing is missing): their t log t is reused */
    double memo_d[SMALL], memo_dx[SMALL];
    for (Py_ssize_t j = 0; j < d && j < SMALL; j++) memo_d[j] = -1.0;
    for (Py_ssize_t i = 0; i < d; i++) {
        Py_ssize_t fa = fids[i];
        for (Py_ssize_t j = 0; j < d; j++) {
            Py_ssize_t b = ids[j];
            double *dv = ref3(D, k, fa, b);
            *dv += w;
            if (S->on) {
                double t;
                if (j < SMALL && memo_d[j] == *dv) {
                    t = memo_dx[j];
                } else {
                    t = xlogx(*dv);
                    if (j < SMALL) {
                        memo_d[j] = *dv;
                        memo_dx[j] = t;
                    }
                }
                double *g = ref3(&S->GL, k, fa, b);
                *ref3(&S->SM, k, fids[j], fa) += t - *g;
                *g = t;
            }
        }
        *ref3(T, k, fa, 0) += w;
    }
    return 1;
}

/* tree_learn(x, cell_ids, cf, exclude, strings_only, k, w, N, D, T, sums) -> True | None
 * TreePart.learn_one for an event whose cells are all known, the margins current (see
 * tree_update; N, D: (view, s0, s1, s2), T: (view, t0, t1); sums: None or 5 tables). None,
 * touching nothing, otherwise. */
static PyObject *tree_learn(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_NARGS(11);
    PyObject *x = args[0], *cell_ids = args[1], *cf = args[2], *exclude = args[3];
    Py_ssize_t k;
    double w;
    int strings_only;
    table_t N, D, T;
    sums_t S;
    if (check_dict(x, "event") || check_dict(cell_ids, "cell ids") ||
        (exclude != Py_None && check_dict(exclude, "exclude")) || (strings_only = PyObject_IsTrue(args[4])) < 0 ||
        get_index(args[5], &k) || get_double(args[6], &w) || get_table(args[7], 3, &N) ||
        get_table(args[8], 3, &D) || get_table(args[9], 2, &T) || get_sums(args[10], &S))
        return NULL;
    if (!PyList_Check(cf)) {
        PyErr_SetString(PyExc_TypeError, "expected a list (cell features)");
        return NULL;
    }
    Py_ssize_t size = PyDict_GET_SIZE(x);
    if (!(w > 0) || !isfinite(w) || size == 0) Py_RETURN_NONE;
    event_t e;
    if (event_init(&e, size)) return NULL;
    Py_ssize_t small_f[SMALL], *fids = size <= SMALL ? small_f : PyMem_Malloc(size * sizeof(Py_ssize_t));
    PyObject *result = NULL;
    if (fids == NULL) {
        PyErr_NoMemory();
        event_free(&e);
        return NULL;
    }
    int ok = read_tree_event(x, cell_ids, cf, exclude, strings_only, &e, fids);
    if (ok > 0) ok = tree_update(e.id, fids, e.n, k, w, &N, &D, &T, &S);
    if (ok > 0) {
        result = Py_True;
        Py_INCREF(result);
    }
    if (fids != small_f) PyMem_Free(fids);
    event_free(&e);
    if (result != NULL || ok < 0 || PyErr_Occurred()) return result;
    Py_RETURN_NONE;
}

/* tree_add(ids, fids, k, w, N, D, T, sums) -> True
 * tree_update for an event already read and registered by the Python path (lists of cell ids
 * and their feature ids). */
static PyObject *tree_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_NARGS(8);
    PyObject *ids_obj = args[0], *fids_obj = args[1];
    Py_ssize_t k;
    double w;
    table_t N, D, T;
    sums_t S;
    if (!PyList_Check(ids_obj) || !PyList_Check(fids_obj) || PyList_GET_SIZE(ids_obj) != PyList_GET_SIZE(fids_obj)) {
        PyErr_SetString(PyExc_TypeError, "expected two lists of ids of one length");
        return NULL;
    }
    if (get_index(args[2], &k) || get_double(args[3], &w) || get_table(args[4], 3, &N) ||
        get_table(args[5], 3, &D) || get_table(args[6], 2, &T) || get_sums(args[7], &S))
        return NULL;
    if (!(w > 0) || !isfinite(w)) {
        PyErr_SetString(PyExc_ValueError, "expected a finite weight above 0");
        return NULL;
    }
    Py_ssize_t d = PyList_GET_SIZE(ids_obj);
    event_t e;
    if (event_init(&e, d)) return NULL;
    Py_ssize_t small_f[SMALL], *fids = d <= SMALL ? small_f : PyMem_Malloc(d * sizeof(Py_ssize_t));
    int ok = 1;
    if (fids == NULL) {
        PyErr_NoMemory();
        ok = -1;
    }
    for (Py_ssize_t i = 0; ok > 0 && i < d; i++) {
        if (get_index(PyList_GET_ITEM(ids_obj, i), &e.id[i]) || get_index(PyList_GET_ITEM(fids_obj, i), &fids[i]))
            ok = -1;
    }
    if (ok > 0) ok = tree_update(e.id, fids, d, k, w, &N, &D, &T, &S);
    if (fids != NULL && fids != small_f) PyMem_Free(fids);
    event_free(&e);
    if (ok < 0) return NULL;
    Py_RETURN_TRUE;
}

/* tree_joint(x, cell_ids, cf, exclude, strings_only, parents, N, D, T, nv, alpha, n_classes[, prior])
 *     -> list | None
 * TreePart.joint_one for an event whose cells are all known and whose observed features have
 * their parent observed (no feature to sum out): per class y, the exact sum (math.fsum) over the
 * event's features j of log(n[y, j, p] + alpha) - log(D[y, f(j), p] + alpha |X_j|) with p the
 * parent's cell, or log(n[y, j, j] + alpha) - log(T[y, f(j)] + alpha |X_j|) for a root. With
 * ``prior`` s > 0 a feature with a parent is smoothed toward its marginal given the class
 * (streamnb.bn.tree_inference.smoothed): log(n[y, j, p] + s th) - log(D[y, f(j), p] + s) with
 * th = (n[y, j, j] + alpha) / (T[y, f(j)] + alpha |X_j|).
 * ``parents``: one list of parent feature ids (-1: none) shared by every class, or one per class.
 * None otherwise (the Python path sums missing features out). */
static PyObject *tree_joint(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 12 && nargs != 13) {
        PyErr_Format(PyExc_TypeError, "expected 12 or 13 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *x = args[0], *cell_ids = args[1], *cf = args[2], *exclude = args[3], *parents = args[5];
    PyObject *nv = args[9];
    Py_ssize_t C;
    double alpha, prior = 0.0;
    if (nargs == 13 && get_double(args[12], &prior)) return NULL;
    int strings_only;
    table_t N, D, T;
    if (check_dict(x, "event") || check_dict(cell_ids, "cell ids") ||
        (exclude != Py_None && check_dict(exclude, "exclude")) || (strings_only = PyObject_IsTrue(args[4])) < 0 ||
        get_table(args[6], 3, &N) || get_table(args[7], 3, &D) || get_table(args[8], 2, &T) ||
        get_double(args[10], &alpha) || get_index(args[11], &C))
        return NULL;
    if (!PyList_Check(cf) || !PyList_Check(parents) || !PyList_Check(nv)) {
        PyErr_SetString(PyExc_TypeError, "expected lists (cell features, parents, values per feature)");
        return NULL;
    }
    Py_ssize_t groups = PyList_GET_SIZE(parents), size = PyDict_GET_SIZE(x);
    if (!(alpha > 0) || C < 1 || C > MAX_CLASSES || size == 0 || (groups != 1 && groups != C)) Py_RETURN_NONE;
    for (Py_ssize_t g = 0; g < groups; g++) {
        if (!PyList_Check(PyList_GET_ITEM(parents, g))) {
            PyErr_SetString(PyExc_TypeError, "expected lists of parent ids");
            return NULL;
        }
    }
    event_t e;
    if (event_init(&e, size)) return NULL;
    Py_ssize_t *fids = NULL, *par = NULL;
    double *terms = NULL;
    PyObject *result = NULL;
    int ok = 0;
    fids = PyMem_Malloc(size * sizeof(Py_ssize_t));
    par = PyMem_Malloc(size * sizeof(Py_ssize_t));
    terms = PyMem_Malloc(size * sizeof(double));
    if (fids == NULL || par == NULL || terms == NULL) {
        PyErr_NoMemory();
        ok = -1;
        goto out;
    }
    ok = read_tree_event(x, cell_ids, cf, exclude, strings_only, &e, fids);
    if (ok <= 0) goto out;
    Py_ssize_t n_nv = PyList_GET_SIZE(nv);
    double out[MAX_CLASSES];
    for (Py_ssize_t c = 0; c < C; c++) {
        PyObject *pa = PyList_GET_ITEM(parents, groups == 1 ? 0 : c);
        Py_ssize_t n_pa = PyList_GET_SIZE(pa);
        if (c == 0 || groups > 1) { /* each observed feature's parent cell: -1 a root */
            for (Py_ssize_t i = 0; i < e.n; i++) {
                Py_ssize_t j = fids[i];
                if (j >= n_pa || j >= n_nv) {
                    ok = 0;
                    goto out;
                }
                Py_ssize_t p = PyLong_AsSsize_t(PyList_GET_ITEM(pa, j));
                if (p == -1 && PyErr_Occurred()) {
                    ok = -1;
                    goto out;
                }
                par[i] = -1;
                if (p >= 0) {
                    for (Py_ssize_t q = 0; q < e.n; q++) {
                        if (fids[q] == p) {
                            par[i] = e.id[q];
                            break;
                        }
                    }
                    if (par[i] < 0) { /* the parent is missing: summed out on the Python path */
                        ok = 0;
                        goto out;
                    }
                }
            }
        }
        for (Py_ssize_t i = 0; i < e.n; i++) {
            Py_ssize_t a = e.id[i], j = fids[i], b = par[i];
            PyObject *nvj = PyList_GET_ITEM(nv, j);
            if (!PyFloat_CheckExact(nvj)) {
                ok = 0;
                goto out;
            }
            double av = alpha * PyFloat_AS_DOUBLE(nvj);
            if (b < 0) {
                if (!fits(&N, c, a, a) || !fits(&T, c, j, 0)) {
                    ok = -1;
                    goto out;
                }
                terms[i] = log(at3(&N, c, a, a) + alpha) - log(at3(&T, c, j, 0) + av);
            } else {
                if (!fits(&N, c, a, b) || !fits(&D, c, j, b)) {
                    ok = -1;
                    goto out;
                }
                if (prior > 0) {
                    if (!fits(&N, c, a, a) || !fits(&T, c, j, 0)) {
                        ok = -1;
                        goto out;
                    }
                    double th = (at3(&N, c, a, a) + alpha) / (at3(&T, c, j, 0) + av);
                    terms[i] = log(at3(&N, c, a, b) + prior * th) - log(at3(&D, c, j, b) + prior);
                } else {
                    terms[i] = log(at3(&N, c, a, b) + alpha) - log(at3(&D, c, j, b) + av);
                }
            }
        }
        out[c] = fsum(terms, e.n);
    }
    result = float_list(out, C);
out:
    PyMem_Free(fids);
    PyMem_Free(par);
    PyMem_Free(terms);
    event_free(&e);
    if (result != NULL || ok < 0 || PyErr_Occurred()) return result;
    Py_RETURN_NONE;
}

/* -- the module -------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"tree_learn", (PyCFunction)(void (*)(void))tree_learn, METH_FASTCALL,
     "tree_learn(x, cell_ids, cf, exclude, strings_only, k, w, N, D, T, sums)"},
    {"tree_add", (PyCFunction)(void (*)(void))tree_add, METH_FASTCALL, "tree_add(ids, fids, k, w, N, D, T, sums)"},
    {"tree_joint", (PyCFunction)(void (*)(void))tree_joint, METH_FASTCALL,
     "tree_joint(x, cell_ids, cf, exclude, strings_only, parents, N, D, T, nv, alpha, n_classes[, prior])"},
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
    xlogx_init();
    PyObject *m = PyModule_Create(&module);
    /* the SHA-256 of this source, as setup.py built it: streamnb.kernels uses the module only
       if it matches the source beside it (a build of another checkout is not loaded) */
    if (m != NULL && PyModule_AddStringConstant(m, "SOURCE_SHA256", STREAMNB_KERNELS_SHA256) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
