/* symgrad._native: loads kernel libraries (plain shared objects) and calls them from C.
 *
 * Callable is the base type of symgrad.Function: a call whose arguments the kernel takes as
 * they are (Python floats, or exact numpy arrays of the kernel's dtype, C-contiguous,
 * aligned, in native byte order, each of the one batch shape or of none, shared by every
 * point; out= arrays of the results' exact shapes that overlap nothing) runs here, without
 * a Python frame. Any
 * other call goes to the Function's _call method (the Python path: conversions, broadcasting,
 * chunks, store modes and every error message), so the two paths give the same results.
 *
 * Kernel holds one entry point, K_call(n, mode, pointers) (render/cpu.py, render/loops.py),
 * and the shapes it needs; its run() method is the Python path's call of the kernel. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

typedef void (*call_fn)(int64_t n, int mode, void *const *p);
typedef const char *(*string_fn)(void);
typedef void (*data_fn)(const void *const *p);

#define SERIAL 4                 /* mode bit: on the calling thread alone (calling.SERIAL) */
#define STACK_PTRS 32
#define STACK_NUMBERS 256

static int forked = 0;           /* a child of fork(): OpenMP's threads are gone */
static void after_fork(void) { forked = 1; }

/* ---- libraries ------------------------------------------------------------------------- */
static PyObject *lib_open(PyObject *self, PyObject *arg) {
    PyObject *bytes;
    if (!PyUnicode_FSConverter(arg, &bytes)) return NULL;
    void *h = dlopen(PyBytes_AS_STRING(bytes), RTLD_NOW | RTLD_LOCAL);
    Py_DECREF(bytes);
    if (!h) {
        const char *e = dlerror();
        PyErr_SetString(PyExc_OSError, e ? e : "dlopen failed");
        return NULL;
    }
    return PyLong_FromVoidPtr(h);
}

static PyObject *lib_symbol(PyObject *self, PyObject *args) {
    PyObject *handle;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os", &handle, &name)) return NULL;
    void *h = PyLong_AsVoidPtr(handle);
    if (!h && PyErr_Occurred()) return NULL;
    dlerror();
    void *p = dlsym(h, name);
    return PyLong_FromVoidPtr(p);  /* 0 where absent */
}

static PyObject *lib_string(PyObject *self, PyObject *arg) {
    string_fn f = (string_fn)PyLong_AsVoidPtr(arg);
    if (!f) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "null function");
        return NULL;
    }
    const char *s = f();
    if (!s) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "strict");
}

static PyObject *lib_integer(PyObject *self, PyObject *arg) {
    int (*f)(void) = (int (*)(void))PyLong_AsVoidPtr(arg);
    if (!f) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "null function");
        return NULL;
    }
    return PyLong_FromLong(f());
}

static PyObject *lib_set_data(PyObject *self, PyObject *args) {
    /* set_data(address of K_data, sequence of C-contiguous arrays): the data a kernel's loops read */
    PyObject *addr, *seq;
    if (!PyArg_ParseTuple(args, "OO", &addr, &seq)) return NULL;
    data_fn f = (data_fn)PyLong_AsVoidPtr(addr);
    if (!f) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "null function");
        return NULL;
    }
    PyObject *fast = PySequence_Fast(seq, "set_data takes a sequence of arrays");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    const void **p = PyMem_Malloc(sizeof(void *) * (size_t)(n ? n : 1));
    if (!p) { Py_DECREF(fast); return PyErr_NoMemory(); }
    for (Py_ssize_t k = 0; k < n; ++k) {
        PyObject *a = PySequence_Fast_GET_ITEM(fast, k);
        if (!PyArray_Check(a) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a)) {
            PyMem_Free(p); Py_DECREF(fast);
            PyErr_SetString(PyExc_TypeError, "set_data takes C-contiguous numpy arrays");
            return NULL;
        }
        p[k] = PyArray_DATA((PyArrayObject *)a);
    }
    f(p);
    PyMem_Free(p);
    Py_DECREF(fast);
    Py_RETURN_NONE;
}

/* ---- Kernel ------------------------------------------------------------------------------ */
typedef struct {
    int nd;
    npy_intp dims[NPY_MAXDIMS];
    npy_intp size;
} Core;

typedef struct {
    PyObject_HEAD
    call_fn fn;
    call_fn one;                   /* single points, one lane (K_one: Options.one_point), or NULL */
    int typenum, itemsize;
    int nargs, nskip, nres;
    Core *args, *res;             /* nargs, nres */
    npy_intp res_numbers;          /* numbers of the kept results per point */
    npy_intp skip_numbers;         /* numbers of the skipped (NULL) results per point */
    npy_intp stream_bytes;         /* batches of this many result bytes go the Python path (-1: none) */
    int scalars;                   /* float64, all arguments scalars: Python floats taken as they are */
    Py_ssize_t par_points;         /* batches of fewer points run on the calling thread alone */
    Py_ssize_t gil_points;         /* batches of fewer points keep the GIL (shorter than releasing it) */
    Py_ssize_t chunk_bytes;        /* shared arguments are repeated this many bytes at a time (0: not here) */
    PyObject *structure;           /* int or nested tuple of ints: how results nest */
} Kernel;

static int read_core(PyObject *shape, Core *c) {
    PyObject *t = PySequence_Tuple(shape);
    if (!t) return -1;
    Py_ssize_t nd = PyTuple_GET_SIZE(t);
    if (nd > NPY_MAXDIMS) {
        Py_DECREF(t);
        PyErr_Format(PyExc_ValueError, "%zd core dimensions: numpy arrays have at most %d", nd, NPY_MAXDIMS);
        return -1;
    }
    c->nd = (int)nd;
    c->size = 1;
    for (Py_ssize_t k = 0; k < nd; ++k) {
        npy_intp d = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, k));
        if (d < 0) { Py_DECREF(t); if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "negative dimension"); return -1; }
        c->dims[k] = d;
        c->size *= d;
    }
    Py_DECREF(t);
    return 0;
}

static Core *read_cores(PyObject *shapes, int *count) {
    PyObject *t = PySequence_Tuple(shapes);
    if (!t) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    Core *c = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Core));
    if (!c) { Py_DECREF(t); PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t k = 0; k < n; ++k)
        if (read_core(PyTuple_GET_ITEM(t, k), &c[k]) < 0) { PyMem_Free(c); Py_DECREF(t); return NULL; }
    *count = (int)n;
    Py_DECREF(t);
    return c;
}

static void kernel_dealloc(Kernel *k) {
    PyMem_Free(k->args);
    PyMem_Free(k->res);
    Py_XDECREF(k->structure);
    Py_TYPE(k)->tp_free((PyObject *)k);
}

static PyObject *kernel_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    /* Kernel(address of K_call, dtype char 'd'/'f', argument core shapes, result core shapes,
     *        skipped leading results (their sizes: passed as NULL), structure, stream_bytes or -1,
     *        address of K_one or 0: the entry of single points, of K_call's form) */
    PyObject *addr, *arg_shapes, *res_shapes, *skipped, *structure, *one_addr = NULL;
    int code;
    Py_ssize_t stream;
    static char *names[] = {"call", "dtype", "args", "results", "skip", "structure", "stream_bytes", "one", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OCOOOOn|O", names, &addr, &code, &arg_shapes, &res_shapes,
                                     &skipped, &structure, &stream, &one_addr))
        return NULL;
    call_fn fn = (call_fn)PyLong_AsVoidPtr(addr);
    if (!fn) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "null entry point");
        return NULL;
    }
    call_fn one = NULL;
    if (one_addr != NULL && one_addr != Py_None) {
        one = (call_fn)PyLong_AsVoidPtr(one_addr);
        if (PyErr_Occurred()) return NULL;
    }
    if (code != 'd' && code != 'f') { PyErr_SetString(PyExc_ValueError, "dtype must be 'd' or 'f'"); return NULL; }
    Kernel *k = (Kernel *)type->tp_alloc(type, 0);
    if (!k) return NULL;
    k->fn = fn;
    k->one = one;
    k->typenum = code == 'd' ? NPY_DOUBLE : NPY_FLOAT;
    k->itemsize = code == 'd' ? 8 : 4;
    if (!(k->args = read_cores(arg_shapes, &k->nargs)) || !(k->res = read_cores(res_shapes, &k->nres))) {
        Py_DECREF(k);
        return NULL;
    }
    PyObject *sk = PySequence_Tuple(skipped);
    if (!sk) { Py_DECREF(k); return NULL; }
    k->nskip = (int)PyTuple_GET_SIZE(sk);
    k->skip_numbers = 0;
    for (int s = 0; s < k->nskip; ++s) k->skip_numbers += PyLong_AsSsize_t(PyTuple_GET_ITEM(sk, s));
    Py_DECREF(sk);
    if (PyErr_Occurred() || k->nskip > STACK_PTRS) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "too many skipped results");
        Py_DECREF(k);
        return NULL;
    }
    k->res_numbers = 0;
    for (int r = 0; r < k->nres; ++r) k->res_numbers += k->res[r].size;
    k->stream_bytes = stream;
    k->par_points = 1;
    k->gil_points = 0;
    k->chunk_bytes = 0;
    k->scalars = code == 'd';
    for (int a = 0; a < k->nargs; ++a) k->scalars &= k->args[a].nd == 0;
    Py_INCREF(structure);
    k->structure = structure;
    return (PyObject *)k;
}

/* One call of the kernel: with the GIL released unless it is shorter than releasing it. */
static void call(Kernel *k, int64_t n, int mode, void *const *p) {
    call_fn fn = n == 1 && k->one ? k->one : k->fn;  /* the same numbers either way */
    if (n < k->gil_points) {
        fn(n, mode, p);
    } else {
        Py_BEGIN_ALLOW_THREADS
        fn(n, mode, p);
        Py_END_ALLOW_THREADS
    }
}

static PyObject *kernel_run(Kernel *k, PyObject *args) {
    /* run(n, mode, inputs, results): the Python path's kernel call, on C-contiguous arrays
     * (calling.Plan has checked them); the skipped results are passed as NULL */
    Py_ssize_t n;
    int mode;
    PyObject *ins, *outs;
    if (!PyArg_ParseTuple(args, "niOO", &n, &mode, &ins, &outs)) return NULL;
    PyObject *fi = PySequence_Fast(ins, "inputs"), *fo = fi ? PySequence_Fast(outs, "results") : NULL;
    if (!fo) { Py_XDECREF(fi); return NULL; }
    Py_ssize_t ni = PySequence_Fast_GET_SIZE(fi), no = PySequence_Fast_GET_SIZE(fo);
    PyObject *result = NULL;
    void **p = NULL;
    if (ni != k->nargs || no != k->nres) {
        PyErr_Format(PyExc_ValueError, "run takes %d inputs and %d results", k->nargs, k->nres);
        goto done;
    }
    if (no == 0) {
        PyErr_SetString(PyExc_ValueError, "a kernel has results");
        goto done;
    }
    p = PyMem_Malloc(sizeof(void *) * (size_t)(ni + no + k->nskip + 1));
    if (!p) { PyErr_NoMemory(); goto done; }
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < ni + no; ++i) {
        PyObject *a = i < ni ? PySequence_Fast_GET_ITEM(fi, i) : PySequence_Fast_GET_ITEM(fo, i - ni);
        if (!PyArray_Check(a) || PyArray_TYPE((PyArrayObject *)a) != k->typenum ||
            !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a) || !PyArray_ISALIGNED((PyArrayObject *)a) ||
            (i >= ni && !PyArray_ISWRITEABLE((PyArrayObject *)a))) {
            PyErr_SetString(PyExc_TypeError, "run takes aligned C-contiguous arrays of the kernel's dtype");
            goto done;
        }
        if (i == ni) for (int s = 0; s < k->nskip; ++s) p[j++] = NULL;
        p[j++] = PyArray_DATA((PyArrayObject *)a);
    }
    if (forked) mode |= SERIAL;
    call(k, (int64_t)n, mode, p);
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(p);
    Py_DECREF(fi);
    Py_DECREF(fo);
    return result;
}

static PyMemberDef kernel_members[] = {
    {"par_points", T_PYSSIZET, offsetof(Kernel, par_points), 0,
     "batches of fewer points run on the calling thread alone (the fast path; run() takes its mode)"},
    {"gil_points", T_PYSSIZET, offsetof(Kernel, gil_points), 0,
     "batches of fewer points keep the GIL: they take less time than releasing and taking it"},
    {"chunk_bytes", T_PYSSIZET, offsetof(Kernel, chunk_bytes), 0,
     "bytes of scratch in which arguments shared by a batch's points are repeated, a chunk of points at a "
     "time (calling.CHUNK_BYTES); 0: such calls take the Python path"},
    {NULL}
};

static PyMethodDef kernel_methods[] = {
    {"run", (PyCFunction)kernel_run, METH_VARARGS, "run(n, mode, inputs, results): one kernel call"},
    {NULL}
};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symgrad._native.Kernel",
    .tp_basicsize = sizeof(Kernel),
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One kernel's K_call entry point and the shapes it takes and returns.",
    .tp_methods = kernel_methods,
    .tp_members = kernel_members,
    .tp_new = kernel_new,
};

/* ---- the fast call ------------------------------------------------------------------------ */
static PyObject NOT_HANDLED_OBJ;  /* a marker, never returned to Python */
#define NOT_HANDLED (&NOT_HANDLED_OBJ)

/* results nested as ``structure`` says (ints index ``flat``) */
static PyObject *nest(PyObject *structure, PyObject **flat, int count) {
    if (PyLong_Check(structure)) {
        Py_ssize_t i = PyLong_AsSsize_t(structure);
        if (i < 0 || i >= count) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "bad structure"); return NULL; }
        Py_INCREF(flat[i]);
        return flat[i];
    }
    Py_ssize_t n = PyTuple_GET_SIZE(structure);
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (Py_ssize_t k = 0; k < n; ++k) {
        PyObject *item = nest(PyTuple_GET_ITEM(structure, k), flat, count);
        if (!item) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, k, item);
    }
    return t;
}

/* out= flattened as ``structure`` says into ``flat`` (borrowed); 0 where it does not fit */
static int flatten(PyObject *structure, PyObject *value, PyObject **flat, int count) {
    if (PyLong_Check(structure)) {
        Py_ssize_t i = PyLong_AsSsize_t(structure);
        if (i < 0 || i >= count) { PyErr_Clear(); return 0; }
        flat[i] = value;
        return 1;
    }
    if (!PyTuple_CheckExact(value) && !PyList_CheckExact(value)) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(structure);
    if (PySequence_Fast_GET_SIZE(value) != n) return 0;
    for (Py_ssize_t k = 0; k < n; ++k)
        if (!flatten(PyTuple_GET_ITEM(structure, k), PySequence_Fast_GET_ITEM(value, k), flat, count)) return 0;
    return 1;
}

static int overlaps(PyArrayObject *a, PyArrayObject *b) {
    char *pa = PyArray_BYTES(a), *pb = PyArray_BYTES(b);
    npy_intp na = PyArray_NBYTES(a), nb = PyArray_NBYTES(b);
    return na && nb && pa < pb + nb && pb < pa + na;
}

static PyObject *scalar_call(Kernel *k, PyObject *const *argv) {
    double in[STACK_PTRS], buf[STACK_NUMBERS];
    void *p[STACK_PTRS * 3];
    npy_intp total = k->skip_numbers + k->res_numbers;
    if (k->nargs > STACK_PTRS || k->nres > STACK_PTRS || total > STACK_NUMBERS) return NOT_HANDLED;
    for (int a = 0; a < k->nargs; ++a) {
        PyObject *x = argv[a];
        if (PyFloat_Check(x) && (PyFloat_CheckExact(x) || Py_TYPE(x) == &PyDoubleArrType_Type)) {
            in[a] = PyFloat_AS_DOUBLE(x);
        } else if (PyLong_CheckExact(x)) {
            in[a] = PyLong_AsDouble(x);
            if (in[a] == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return NOT_HANDLED; }
        } else {
            return NOT_HANDLED;
        }
        p[a] = &in[a];
    }
    int j = k->nargs;
    for (int s = 0; s < k->nskip; ++s) p[j++] = NULL;
    npy_intp off = 0;
    for (int r = 0; r < k->nres; ++r) {
        p[j++] = buf + off;
        off += k->res[r].size;
    }
    call(k, 1, SERIAL, p);
    PyObject *flat[STACK_PTRS];
    off = 0;
    for (int r = 0; r < k->nres; ++r) {
        Core *c = &k->res[r];
        if (c->nd == 0) {
            flat[r] = PyArrayScalar_New(Double);
            if (flat[r]) PyArrayScalar_ASSIGN(flat[r], Double, buf[off]);
        } else {
            flat[r] = PyArray_SimpleNew(c->nd, c->dims, NPY_DOUBLE);
            if (flat[r]) memcpy(PyArray_DATA((PyArrayObject *)flat[r]), buf + off, (size_t)c->size * sizeof(double));
        }
        if (!flat[r]) { for (int q = 0; q < r; ++q) Py_DECREF(flat[q]); return NULL; }
        off += c->size;
    }
    PyObject *res = nest(k->structure, flat, k->nres);
    for (int r = 0; r < k->nres; ++r) Py_DECREF(flat[r]);
    return res;
}

/* A Python number given for a scalar argument of a float64 kernel: its value (as float(x)
 * converts it), or 0 where it is not such a number (the Python path converts the others). */
static int python_number(PyObject *x, double *v) {
    if (PyFloat_Check(x) && (PyFloat_CheckExact(x) || Py_TYPE(x) == &PyDoubleArrType_Type)) {
        *v = PyFloat_AS_DOUBLE(x);
        return 1;
    }
    if (PyLong_CheckExact(x)) {
        *v = PyLong_AsDouble(x);
        if (*v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        return 1;
    }
    return 0;
}

/* The call as the kernel takes it, or NOT_HANDLED (nothing done: the Python path takes it).
 * Every argument array has the batch shape, or none: then it is shared by every point (a
 * parameter vector beside a batch of states), repeated into scratch a chunk of points at a
 * time; a Python number given for a scalar argument of a float64 kernel is shared too. */
static PyObject *fast_call(Kernel *k, PyObject *const *argv, Py_ssize_t nargs, PyObject *out) {
    if (nargs != k->nargs || k->nargs > STACK_PTRS || k->nres > STACK_PTRS) return NOT_HANDLED;
    if (out == NULL && k->scalars) {
        PyObject *r = scalar_call(k, argv);
        if (r != NOT_HANDLED) return r;
    }
    PyArrayObject *ins[STACK_PTRS], *outs[STACK_PTRS];
    double nums[STACK_PTRS];       /* the Python numbers among the arguments */
    int shared[STACK_PTRS];        /* arguments without batch dimensions (Python numbers too) */
    int bnd = -1;
    npy_intp *batch = NULL, n = 1, shared_numbers = 0;
    for (int a = 0; a < k->nargs; ++a) {
        Core *c = &k->args[a];
        ins[a] = NULL;
        shared[a] = 1;
        if (!PyArray_CheckExact(argv[a])) {
            if (c->nd != 0 || k->typenum != NPY_DOUBLE || !python_number(argv[a], &nums[a])) return NOT_HANDLED;
            continue;
        }
        PyArrayObject *x = (PyArrayObject *)argv[a];
        int nd = PyArray_NDIM(x);
        if (PyArray_TYPE(x) != k->typenum || !PyArray_ISNOTSWAPPED(x) || !PyArray_IS_C_CONTIGUOUS(x) ||
            !PyArray_ISALIGNED(x) || nd < c->nd)
            return NOT_HANDLED;
        npy_intp *dims = PyArray_DIMS(x);
        for (int d = 0; d < c->nd; ++d)
            if (dims[nd - c->nd + d] != c->dims[d]) return NOT_HANDLED;
        ins[a] = x;
        if (nd == c->nd) continue;
        shared[a] = 0;
        if (bnd < 0) {
            bnd = nd - c->nd;
            batch = dims;
            for (int d = 0; d < bnd; ++d) n *= dims[d];
        } else {
            if (nd - c->nd != bnd) return NOT_HANDLED;
            for (int d = 0; d < bnd; ++d)
                if (dims[d] != batch[d]) return NOT_HANDLED;
        }
    }
    if (bnd < 0) bnd = 0;          /* no batched argument: one point */
    if (n == 0 || (k->stream_bytes >= 0 && n * k->res_numbers * k->itemsize >= k->stream_bytes))
        return NOT_HANDLED;
    if (bnd > 0)
        for (int a = 0; a < k->nargs; ++a)
            if (shared[a]) shared_numbers += k->args[a].size;
    if (shared_numbers > 0 && n > 1 && k->chunk_bytes <= 0) return NOT_HANDLED;
    npy_intp shape[NPY_MAXDIMS];
    for (int d = 0; d < bnd; ++d) shape[d] = batch[d];
    if (out != NULL) {
        PyObject *flat[STACK_PTRS];
        if (!flatten(k->structure, out, flat, k->nres)) return NOT_HANDLED;
        for (int r = 0; r < k->nres; ++r) {
            if (!PyArray_CheckExact(flat[r])) return NOT_HANDLED;
            PyArrayObject *o = (PyArrayObject *)flat[r];
            Core *c = &k->res[r];
            if (PyArray_TYPE(o) != k->typenum || !PyArray_ISNOTSWAPPED(o) || !PyArray_IS_C_CONTIGUOUS(o) ||
                !PyArray_ISALIGNED(o) || !PyArray_ISWRITEABLE(o) || PyArray_NDIM(o) != bnd + c->nd)
                return NOT_HANDLED;
            npy_intp *dims = PyArray_DIMS(o);
            for (int d = 0; d < bnd; ++d) if (dims[d] != batch[d]) return NOT_HANDLED;
            for (int d = 0; d < c->nd; ++d) if (dims[bnd + d] != c->dims[d]) return NOT_HANDLED;
            for (int q = 0; q < r; ++q) if (overlaps(o, outs[q])) return NOT_HANDLED;
            for (int a = 0; a < k->nargs; ++a) if (ins[a] && overlaps(o, ins[a])) return NOT_HANDLED;
            outs[r] = o;
        }
        /* held while the GIL is released: another thread may drop them from a list given as out= */
        for (int r = 0; r < k->nres; ++r) Py_INCREF(outs[r]);
    } else {
        for (int r = 0; r < k->nres; ++r) {
            Core *c = &k->res[r];
            if (bnd + c->nd > NPY_MAXDIMS) {
                for (int q = 0; q < r; ++q) Py_DECREF(outs[q]);
                return NOT_HANDLED;
            }
            for (int d = 0; d < c->nd; ++d) shape[bnd + d] = c->dims[d];
            outs[r] = (PyArrayObject *)PyArray_SimpleNew(bnd + c->nd, shape, k->typenum);
            if (!outs[r]) { for (int q = 0; q < r; ++q) Py_DECREF(outs[q]); return NULL; }
        }
    }
    /* the shared arguments, repeated for a chunk of m points (where there is more than one) */
    npy_intp m = n;
    char *scratch = NULL, *shared_at[STACK_PTRS];
    if (shared_numbers > 0 && n > 1) {
        npy_intp per_point = shared_numbers * k->itemsize;
        m = k->chunk_bytes / per_point > 1 ? k->chunk_bytes / per_point : 1;
        if (m > n) m = n;
        scratch = PyMem_Malloc((size_t)(m * per_point));
        if (!scratch) {
            for (int r = 0; r < k->nres; ++r) Py_DECREF(outs[r]);
            return PyErr_NoMemory();
        }
        char *at = scratch;
        for (int a = 0; a < k->nargs; ++a) {
            if (!shared[a]) continue;
            size_t one = (size_t)k->args[a].size * (size_t)k->itemsize, have = one, want = one * (size_t)m;
            if (ins[a]) memcpy(at, PyArray_DATA(ins[a]), one);
            else memcpy(at, &nums[a], one);      /* float64 kernels only: one double */
            for (; have < want; have *= 2) memcpy(at + have, at, have < want - have ? have : want - have);
            shared_at[a] = at;
            at += want;
        }
    }
    void *p[STACK_PTRS * 3];
    for (npy_intp lo = 0; lo < n; lo += m) {
        npy_intp count = n - lo < m ? n - lo : m;
        int j = 0;
        for (int a = 0; a < k->nargs; ++a) {
            Core *c = &k->args[a];
            if (scratch && shared[a]) p[j++] = shared_at[a];
            else if (!ins[a]) p[j++] = &nums[a];
            else p[j++] = PyArray_BYTES(ins[a]) + (size_t)lo * (size_t)c->size * (size_t)k->itemsize;
        }
        for (int s = 0; s < k->nskip; ++s) p[j++] = NULL;
        for (int r = 0; r < k->nres; ++r)
            p[j++] = PyArray_BYTES(outs[r]) + (size_t)lo * (size_t)k->res[r].size * (size_t)k->itemsize;
        call(k, (int64_t)count, forked || count < k->par_points ? SERIAL : 0, p);
        if (lo + m < n && PyErr_CheckSignals() < 0) {  /* Ctrl-C between chunks, as the Python path */
            PyMem_Free(scratch);
            for (int r = 0; r < k->nres; ++r) Py_DECREF(outs[r]);
            return NULL;
        }
    }
    PyMem_Free(scratch);
    if (out != NULL) {
        for (int r = 0; r < k->nres; ++r) Py_DECREF(outs[r]);
        Py_INCREF(out);
        return out;
    }
    PyObject *flat[STACK_PTRS];
    for (int r = 0; r < k->nres; ++r) {
        flat[r] = PyArray_Return(outs[r]);  /* a 0-d result becomes a numpy scalar, as r[()] */
        if (!flat[r]) { for (int q = r + 1; q < k->nres; ++q) Py_DECREF(outs[q]); for (int q = 0; q < r; ++q) Py_DECREF(flat[q]); return NULL; }
    }
    PyObject *res = nest(k->structure, flat, k->nres);
    for (int r = 0; r < k->nres; ++r) Py_DECREF(flat[r]);
    return res;
}

/* ---- Callable: the base type of symgrad.Function ------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *fast;                /* a Kernel, once the Function's calls may take the fast path */
    PyObject *verbs[16];           /* the verbs made so far, by Verb.slot (Verb) */
} Callable;
#define VERB_SLOTS 16

static PyObject *str_call, *str_out;

static PyObject *callable_call(Callable *self, PyObject *args, PyObject *kw);

/* A call of Function ``self`` with positional ``args`` alone: in C where its kernel takes them
 * as they are, else as any call (tp_call: the Python path). */
static PyObject *callable_positional(Callable *self, PyObject *const *args, Py_ssize_t n) {
    PyObject *fast = self->fast;
    if (fast != NULL && Py_TYPE(fast) == &KernelType) {
        Py_INCREF(fast);           /* a call from another thread may replace it */
        PyObject *r = fast_call((Kernel *)fast, args, n, NULL);
        Py_DECREF(fast);
        if (r != NOT_HANDLED) return r;
    }
    PyObject *tuple = PyTuple_New(n);
    if (tuple == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n; ++k) { Py_INCREF(args[k]); PyTuple_SET_ITEM(tuple, k, args[k]); }
    PyObject *r = Py_TYPE(self)->tp_call((PyObject *)self, tuple, NULL);
    Py_DECREF(tuple);
    return r;
}

static PyObject *callable_call(Callable *self, PyObject *args, PyObject *kw) {
    PyObject *fast = self->fast;
    if (fast != NULL && Py_TYPE(fast) == &KernelType) {
        PyObject *out = NULL;
        int ok = 1;
        if (kw != NULL && PyDict_GET_SIZE(kw)) {
            out = PyDict_GetItemWithError(kw, str_out);
            ok = PyDict_GET_SIZE(kw) == 1 && out != NULL;
            if (out == Py_None) out = NULL;
        }
        if (ok) {
            Py_INCREF(fast);       /* a call from another thread may replace it */
            PyObject *r = fast_call((Kernel *)fast, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args), out);
            Py_DECREF(fast);
            if (r != NOT_HANDLED) return r;
        } else if (PyErr_Occurred()) {
            return NULL;
        }
    }
    PyObject *m = PyObject_GetAttr((PyObject *)self, str_call);
    if (!m) return NULL;
    PyObject *r = PyObject_Call(m, args, kw);
    Py_DECREF(m);
    return r;
}

static int callable_traverse(Callable *self, visitproc visit, void *arg) {
    Py_VISIT(self->fast);  /* not the type: a heap subclass's traverse visits it already */
    for (int k = 0; k < VERB_SLOTS; ++k) Py_VISIT(self->verbs[k]);
    return 0;
}

static int callable_clear(Callable *self) {
    Py_CLEAR(self->fast);
    for (int k = 0; k < VERB_SLOTS; ++k) Py_CLEAR(self->verbs[k]);
    return 0;
}

static void callable_dealloc(Callable *self) {
    PyObject_GC_UnTrack(self);
    callable_clear(self);
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free((PyObject *)self);
}

static PyMemberDef callable_members[] = {
    {"_fast", T_OBJECT, offsetof(Callable, fast), 0, "the Kernel that takes calls in C, or None"},
    {NULL}
};

static PyTypeObject CallableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symgrad._native.Callable",
    .tp_basicsize = sizeof(Callable),
    .tp_dealloc = (destructor)callable_dealloc,
    .tp_call = (ternaryfunc)callable_call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Calls that the kernel takes as they are run in C; the rest go to self._call.",
    .tp_traverse = (traverseproc)callable_traverse,
    .tp_clear = (inquiry)callable_clear,
    .tp_members = callable_members,
    .tp_new = PyType_GenericNew,
};

/* ---- Verb: F.grad, F.hessian, ... (symgrad/verbs.py) -------------------------------------
 * A method descriptor (Py_TPFLAGS_METHOD_DESCRIPTOR): read from a Function it is the verb's
 * Function, made once by F._derive(name, None) and kept in F's verbs; called as a method,
 * F.grad(x) calls that Function with x. Python's method-call path then finds it in the type as
 * it finds a method, with no instance dictionary lookup: F.grad(x) costs what G(x) costs with
 * G = F.grad. */
typedef struct {
    PyObject_HEAD
    PyObject *name;                /* the kind's name */
    PyObject *doc;
    vectorcallfunc vectorcall;
    int slot;                      /* where a Function keeps this verb's Function (Callable.verbs) */
} Verb;

static PyObject *str_derive;
static int verbs_made = 0;

static PyObject *verb_get(Verb *v, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) { Py_INCREF(v); return (PyObject *)v; }
    if (!PyObject_TypeCheck(obj, &CallableType)) {
        PyErr_Format(PyExc_TypeError, "verb %R of a symgrad Function read from a %s", v->name, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyObject **kept = &((Callable *)obj)->verbs[v->slot];
    if (*kept != NULL) { Py_INCREF(*kept); return *kept; }
    PyObject *made = PyObject_CallMethodObjArgs(obj, str_derive, v->name, Py_None, NULL);
    if (made == NULL) return NULL;
    if (*kept == NULL) *kept = made;  /* (_derive may have let another thread run: the first one stays) */
    else Py_DECREF(made);
    Py_INCREF(*kept);
    return *kept;
}

static PyObject *verb_vectorcall(Verb *v, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n < 1) {
        PyErr_Format(PyExc_TypeError, "Function.%U needs a Function: F.%U(...)", v->name, v->name);
        return NULL;
    }
    PyObject *f = verb_get(v, args[0], NULL);
    if (f == NULL) return NULL;
    PyObject *r = kwnames == NULL && Py_TYPE(f)->tp_call == (ternaryfunc)callable_call
        ? callable_positional((Callable *)f, args + 1, n - 1)   /* F.grad(x): as G(x), without a tuple */
        : PyObject_Vectorcall(f, args + 1, (n - 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
    Py_DECREF(f);
    return r;
}

static PyObject *verb_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *name, *doc = Py_None;
    static char *kwlist[] = {"name", "doc", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "U|O", kwlist, &name, &doc)) return NULL;
    Verb *v = (Verb *)type->tp_alloc(type, 0);
    if (v == NULL) return NULL;
    Py_INCREF(name);
    Py_INCREF(doc);
    v->name = name;
    v->doc = doc;
    v->vectorcall = (vectorcallfunc)verb_vectorcall;
    v->slot = verbs_made++;
    if (v->slot >= VERB_SLOTS) {
        Py_DECREF(v);
        PyErr_Format(PyExc_ValueError, "more than %d verbs: raise VERB_SLOTS in csrc/symgrad_call.c", VERB_SLOTS);
        return NULL;
    }
    return (PyObject *)v;
}

static void verb_dealloc(Verb *v) {
    Py_XDECREF(v->name);
    Py_XDECREF(v->doc);
    Py_TYPE(v)->tp_free((PyObject *)v);
}

static PyMemberDef verb_members[] = {
    {"name", T_OBJECT, offsetof(Verb, name), READONLY, "the kind's name"},
    {"__doc__", T_OBJECT, offsetof(Verb, doc), READONLY, NULL},
    {NULL}
};

static PyTypeObject VerbType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symgrad._native.Verb",
    .tp_basicsize = sizeof(Verb),
    .tp_dealloc = (destructor)verb_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Verb, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Verb(name, doc): F.<name>, the derivative Function F._derive(name, None), made once.",
    .tp_members = verb_members,
    .tp_descr_get = (descrgetfunc)verb_get,
    .tp_new = verb_new,
};

static PyMethodDef module_methods[] = {
    {"open", lib_open, METH_O, "open(path) -> handle: dlopen a kernel library (OSError with dlerror's message)"},
    {"symbol", lib_symbol, METH_VARARGS, "symbol(handle, name) -> address, 0 where absent"},
    {"string", lib_string, METH_O, "string(address of a const char *f(void)) -> str"},
    {"integer", lib_integer, METH_O, "integer(address of an int f(void)) -> int"},
    {"set_data", lib_set_data, METH_VARARGS, "set_data(address of K_data, arrays)"},
    {NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_native", "symgrad's kernel loader and C call path.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    import_array();
    if (PyType_Ready(&KernelType) < 0 || PyType_Ready(&CallableType) < 0 || PyType_Ready(&VerbType) < 0) return NULL;
    str_call = PyUnicode_InternFromString("_call");
    str_out = PyUnicode_InternFromString("out");
    str_derive = PyUnicode_InternFromString("_derive");
    if (!str_call || !str_out || !str_derive) return NULL;
    pthread_atfork(NULL, NULL, after_fork);
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    Py_INCREF(&KernelType);
    Py_INCREF(&CallableType);
    Py_INCREF(&VerbType);
    if (PyModule_AddObject(m, "Kernel", (PyObject *)&KernelType) < 0 ||
        PyModule_AddObject(m, "Callable", (PyObject *)&CallableType) < 0 ||
        PyModule_AddObject(m, "Verb", (PyObject *)&VerbType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
