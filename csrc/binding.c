/* The CPython binding of the C core, and the only C file that includes Python.h: it parses
 * arguments, borrows numpy buffers without copying, runs plain C with the GIL released, and
 * converts results to Python objects. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "cache/cache.h"
#include "gcx.h"
#include "policies/policies.h"

/* ---- buffers --------------------------------------------------------------------------- */

enum buf_kind { BUF_U64, BUF_BOOL };

static const char *buf_kind_name(enum buf_kind k) { return k == BUF_U64 ? "uint64" : "bool"; }

static int format_is(const char *fmt, const char *codes)
{
    if (!fmt)
        return 0;
    if (*fmt == '<' || *fmt == '=' || *fmt == '@')
        fmt++;
    return fmt[0] != '\0' && fmt[1] == '\0' && strchr(codes, fmt[0]) != NULL;
}

/* Borrow a one-dimensional, C-contiguous buffer of the given element kind from `obj`, or raise
 * a TypeError/ValueError naming the argument. On success the caller must PyBuffer_Release. */
static int get_vector(PyObject *obj, const char *arg, enum buf_kind kind, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a numpy array of %s, got %.100s", arg, buf_kind_name(kind),
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    const char *problem = NULL;
    if (view->ndim != 1)
        problem = "must be one-dimensional";
    else if (!PyBuffer_IsContiguous(view, 'C'))
        problem = "must be C-contiguous (pass numpy.ascontiguousarray(...) to copy it)";
    if (problem) {
        PyErr_Format(PyExc_ValueError, "%s %s, got an array with ndim=%d", arg, problem, view->ndim);
        PyBuffer_Release(view);
        return -1;
    }
    int ok = kind == BUF_U64 ? (view->itemsize == 8 && format_is(view->format, "QL"))
                             : (view->itemsize == 1 && format_is(view->format, "?B"));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s must have dtype %s, got buffer format '%s' (itemsize %zd)", arg,
                     buf_kind_name(kind), view->format ? view->format : "B", view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* ---- errors ---------------------------------------------------------------------------- */

static PyObject *raise_gcx(const gcx_error *err)
{
    PyObject *type = PyExc_RuntimeError;
    switch (err->code) {
    case GCX_ERR_VALUE:
    case GCX_ERR_TRACE:
        type = PyExc_ValueError;
        break;
    case GCX_ERR_NOMEM:
        type = PyExc_MemoryError;
        break;
    case GCX_ERR_IO:
        type = PyExc_OSError;
        break;
    default:
        break;
    }
    PyErr_SetString(type, err->msg);
    return NULL;
}

/* ---- plug-in descriptions --------------------------------------------------------------- */

static PyObject *param_specs_to_list(const gcx_param_spec *params, int n)
{
    PyObject *list = PyList_New(n);
    if (!list)
        return NULL;
    for (int i = 0; i < n; i++) {
        const gcx_param_spec *p = &params[i];
        PyObject *d = Py_BuildValue("{s:s,s:s,s:d,s:d,s:d,s:O}", "name", p->name, "doc", p->doc, "default",
                                    p->default_value, "min", p->min_value, "max", p->max_value, "integer",
                                    p->is_integer ? Py_True : Py_False);
        if (!d) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, d);
    }
    return list;
}

static PyObject *py_policies(PyObject *self, PyObject *noargs)
{
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    for (const gcx_policy *const *p = gcx_policies; *p; p++) {
        PyObject *params = param_specs_to_list((*p)->params, (*p)->n_params);
        PyObject *d = params ? Py_BuildValue("{s:s,s:s,s:N}", "name", (*p)->name, "doc", (*p)->doc, "params", params)
                             : NULL;
        if (!d || PyList_Append(out, d) != 0) {
            Py_XDECREF(d);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(d);
    }
    return out;
}

/* ---- functional cache ---------------------------------------------------------------- */

static PyObject *cache_stats_dict(const gcx_cache_stats *s)
{
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
#define GCX_X(name, doc)                                                                        \
    {                                                                                           \
        PyObject *v = PyLong_FromUnsignedLongLong(s->name);                                     \
        if (!v || PyDict_SetItemString(d, #name, v) != 0) {                                     \
            Py_XDECREF(v);                                                                      \
            Py_DECREF(d);                                                                       \
            return NULL;                                                                        \
        }                                                                                       \
        Py_DECREF(v);                                                                           \
    }
    GCX_CACHE_STATS(GCX_X)
#undef GCX_X
    return d;
}

static PyObject *py_cache_stat_docs(PyObject *self, PyObject *noargs)
{
    return Py_BuildValue("{"
#define GCX_X(name, doc) "s:s"
                         GCX_CACHE_STATS(GCX_X)
#undef GCX_X
                         "}"
#define GCX_X(name, doc) , #name, doc
                             GCX_CACHE_STATS(GCX_X)
#undef GCX_X
    );
}

/* Read the policy's parameters from a dict {name: number}; unknown names are errors. */
static int read_policy_params(const gcx_policy *policy, PyObject *params, double *out)
{
    for (int i = 0; i < policy->n_params; i++)
        out[i] = policy->params[i].default_value;
    if (!params || params == Py_None)
        return 0;
    if (!PyDict_Check(params)) {
        PyErr_SetString(PyExc_TypeError, "policy_params must be a dict");
        return -1;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(params, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!name) {
            PyErr_SetString(PyExc_TypeError, "policy parameter names must be strings");
            return -1;
        }
        int found = -1;
        for (int i = 0; i < policy->n_params; i++)
            if (strcmp(policy->params[i].name, name) == 0)
                found = i;
        if (found < 0) {
            PyErr_Format(PyExc_ValueError, "unknown option %R for policy '%s'", key, policy->name);
            return -1;
        }
        if (PyBool_Check(value) || !PyNumber_Check(value)) {
            PyErr_Format(PyExc_TypeError, "option %s of policy '%s' must be a number, got %.100s", name,
                         policy->name, Py_TYPE(value)->tp_name);
            return -1;
        }
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred())
            return -1;
        out[found] = v;
    }
    return 0;
}

static PyObject *py_cache_run(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"addresses", "writes", "sets", "ways", "line_bytes", "policy", "sector_bytes",
                             "write_back", "write_allocate", "index", "seed", "policy_params", NULL};
    PyObject *addr_obj, *writes_obj = Py_None, *policy_params = Py_None;
    long long sets, ways, line_bytes, sector_bytes = 0;
    const char *policy_name = "lru", *index = "mod";
    int write_back = 1, write_allocate = 1;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOLLL|sLppsKO", kwlist, &addr_obj, &writes_obj, &sets, &ways,
                                     &line_bytes, &policy_name, &sector_bytes, &write_back, &write_allocate, &index,
                                     &seed, &policy_params))
        return NULL;

    const char *bad = sets <= 0 ? "sets" : ways <= 0 ? "ways" : line_bytes <= 0 ? "line_bytes" : NULL;
    long long bad_value = sets <= 0 ? sets : ways <= 0 ? ways : line_bytes;
    if (bad)
        return PyErr_Format(PyExc_ValueError, "%s must be a positive integer, got %lld", bad, bad_value);
    if (sector_bytes < 0)
        return PyErr_Format(PyExc_ValueError, "sector_bytes must be positive (or 0 for no sectors), got %lld",
                            sector_bytes);
    if (sets > UINT32_MAX || ways > UINT32_MAX || line_bytes > UINT32_MAX || sector_bytes > UINT32_MAX)
        return PyErr_Format(PyExc_ValueError, "cache geometry too large (sets %lld, ways %lld, line_bytes %lld)",
                            sets, ways, line_bytes);
    if (!gcx_is_pow2((uint64_t)line_bytes))
        return PyErr_Format(PyExc_ValueError, "line_bytes must be a power of two, got %lld", line_bytes);
    const gcx_policy *policy = gcx_policy_find(policy_name);
    if (!policy) {
        PyObject *names = PyUnicode_FromString("");
        for (const gcx_policy *const *p = gcx_policies; names && *p; p++)
            PyUnicode_AppendAndDel(&names, PyUnicode_FromFormat("%s%s", p == gcx_policies ? "" : ", ", (*p)->name));
        PyErr_Format(PyExc_ValueError, "unknown policy '%s' (known: %U)", policy_name, names);
        Py_XDECREF(names);
        return NULL;
    }
    int index_fn;
    if (strcmp(index, "mod") == 0)
        index_fn = GCX_INDEX_MOD;
    else if (strcmp(index, "xor") == 0)
        index_fn = GCX_INDEX_XOR;
    else
        return PyErr_Format(PyExc_ValueError, "index must be 'mod' or 'xor', got '%s'", index);

    gcx_cache_config cfg = {
        .sets = (uint32_t)sets,
        .ways = (uint32_t)ways,
        .line_bytes = (uint32_t)line_bytes,
        .sector_bytes = (uint32_t)sector_bytes,
        .index_fn = index_fn,
        .write_back = write_back,
        .write_allocate = write_allocate,
        .policy = policy,
        .seed = seed,
    };
    if (read_policy_params(policy, policy_params, cfg.policy_params) != 0)
        return NULL;

    Py_buffer addrs, writes;
    int have_writes = writes_obj != Py_None;
    if (get_vector(addr_obj, "addresses", BUF_U64, &addrs) != 0)
        return NULL;
    if (have_writes) {
        if (get_vector(writes_obj, "writes", BUF_BOOL, &writes) != 0) {
            PyBuffer_Release(&addrs);
            return NULL;
        }
        if (writes.shape[0] != addrs.shape[0]) {
            PyErr_Format(PyExc_ValueError, "writes has %zd elements but addresses has %zd; they must match",
                         writes.shape[0], addrs.shape[0]);
            PyBuffer_Release(&writes);
            PyBuffer_Release(&addrs);
            return NULL;
        }
    }

    gcx_cache cache;
    gcx_error err = {0};
    int rc = gcx_cache_init(&cache, &cfg, &err);
    if (rc == GCX_OK) {
        Py_BEGIN_ALLOW_THREADS
        gcx_cache_run(&cache, (const uint64_t *)addrs.buf, have_writes ? (const uint8_t *)writes.buf : NULL,
                      (size_t)addrs.shape[0]);
        Py_END_ALLOW_THREADS
    }
    if (have_writes)
        PyBuffer_Release(&writes);
    PyBuffer_Release(&addrs);
    if (rc != GCX_OK)
        return raise_gcx(&err);
    PyObject *result = cache_stats_dict(&cache.stats);
    gcx_cache_free(&cache);
    return result;
}

/* ---- module ---------------------------------------------------------------------------- */

static PyMethodDef core_methods[] = {
    {"policies", py_policies, METH_NOARGS, "Replacement policies known to the core, with their parameters."},
    {"cache_stat_docs", py_cache_stat_docs, METH_NOARGS, "Name -> meaning of every cache counter."},
    {"cache_run", (PyCFunction)(void (*)(void))py_cache_run, METH_VARARGS | METH_KEYWORDS,
     "cache_run(addresses, writes, sets, ways, line_bytes, policy='lru', sector_bytes=0, write_back=True, "
     "write_allocate=True, index='mod', seed=0, policy_params=None) -> dict of counters"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_core",
    .m_doc = "gpucachex C simulation core.",
    .m_size = -1,
    .m_methods = core_methods,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&core_module); }
