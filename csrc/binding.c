/* The CPython binding of the C core, and the only C file that includes Python.h: it parses
 * arguments, borrows numpy buffers without copying, runs plain C with the GIL released, and
 * converts results to Python objects. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "cache/cache.h"
#include "gcx.h"
#include "policies/policies.h"
#include "sim/config.h"
#include "sim/gpu.h"
#include "sim/workload.h"
#include "techniques/technique.h"
#include "trace/check.h"
#include "trace/traceg.h"

/* ---- buffers --------------------------------------------------------------------------- */

static int format_is(const char *fmt, const char *codes);

enum buf_kind { BUF_U64, BUF_BOOL, BUF_U8, BUF_U16, BUF_U32 };

static const char *buf_kind_name(enum buf_kind k)
{
    static const char *const names[] = {"uint64", "bool", "uint8", "uint16", "uint32"};
    return names[k];
}

static int buf_kind_ok(enum buf_kind kind, const Py_buffer *v)
{
    /* Format codes for the unsigned sizes on LP64 platforms (numpy uses L for uint64 on Linux). */
    switch (kind) {
    case BUF_U64: return v->itemsize == 8 && format_is(v->format, "QL");
    case BUF_BOOL: return v->itemsize == 1 && format_is(v->format, "?B");
    case BUF_U8: return v->itemsize == 1 && format_is(v->format, "B");
    case BUF_U16: return v->itemsize == 2 && format_is(v->format, "H");
    case BUF_U32: return v->itemsize == 4 && format_is(v->format, "IL");
    }
    return 0;
}

static int format_is(const char *fmt, const char *codes)
{
    if (!fmt)
        return 0;
    if (*fmt == '<' || *fmt == '=' || *fmt == '@')
        fmt++;
    return fmt[0] != '\0' && fmt[1] == '\0' && strchr(codes, fmt[0]) != NULL;
}

/* The core reads items through typed pointers: an array at an odd offset into its memory
 * (numpy.frombuffer(..., offset=1)) would be read misaligned, which C leaves undefined. */
static int buf_aligned(const Py_buffer *view)
{
    return view->len == 0 || view->itemsize <= 1 || (uintptr_t)view->buf % (uintptr_t)view->itemsize == 0;
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
    if (!buf_kind_ok(kind, view)) {
        PyErr_Format(PyExc_TypeError, "%s must have dtype %s, got buffer format '%s' (itemsize %zd)", arg,
                     buf_kind_name(kind), view->format ? view->format : "B", view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    if (!buf_aligned(view)) {
        PyErr_Format(PyExc_ValueError, "%s: the array must be aligned to its %zd-byte items (numpy.require(a, "
                     "requirements='A') copies it)", arg, view->itemsize);
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
    case GCX_ERR_STOPPED:
        type = PyExc_KeyboardInterrupt;
        break;
    default:
        break;
    }
    /* Messages quote file names and trace text: decode leniently so a stray byte cannot turn the
     * error into a UnicodeDecodeError. */
    PyObject *msg = PyUnicode_DecodeUTF8(err->msg, (Py_ssize_t)strnlen(err->msg, sizeof err->msg), "replace");
    if (msg) {
        PyErr_SetObject(type, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

/* ---- plug-in descriptions --------------------------------------------------------------- */

/* The names of a comma-separated choice list as a Python list; None for NULL (numeric). */
static PyObject *choice_list(const char *choices)
{
    if (!choices)
        return Py_NewRef(Py_None);
    PyObject *all = PyUnicode_FromString(choices), *sep = PyUnicode_FromString(",");
    PyObject *out = all && sep ? PyUnicode_Split(all, sep, -1) : NULL;
    Py_XDECREF(all);
    Py_XDECREF(sep);
    return out;
}

/* Append `item`, a new reference or NULL after a failed call, to `list`, consuming it: -1 when
 * `item` is NULL or the append fails (an exception is set either way). */
static int list_append_new(PyObject *list, PyObject *item)
{
    if (!item)
        return -1;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

/* A plug-in's parameters; `choice_names` (NULL: all numeric) gives each one's names, as in
 * gcx_technique.param_choices. */
static PyObject *param_specs_to_list(const gcx_param_spec *params, int n, const char *const *choice_names)
{
    PyObject *list = PyList_New(n);
    if (!list)
        return NULL;
    for (int i = 0; i < n; i++) {
        const gcx_param_spec *p = &params[i];
        PyObject *choices = choice_list(choice_names ? choice_names[i] : NULL);
        PyObject *d = choices ? Py_BuildValue("{s:s,s:s,s:d,s:d,s:d,s:O,s:N}", "name", p->name, "doc", p->doc,
                                              "default", p->default_value, "min", p->min_value, "max",
                                              p->max_value, "integer", p->is_integer ? Py_True : Py_False,
                                              "choices", choices)
                              : NULL;
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
        PyObject *params = param_specs_to_list((*p)->params, (*p)->n_params, NULL);
        PyObject *d = params ? Py_BuildValue("{s:s,s:s,s:N}", "name", (*p)->name, "doc", (*p)->doc, "params", params)
                             : NULL;
        if (list_append_new(out, d) != 0) {
            Py_DECREF(out);
            return NULL;
        }
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

/* The UTF-8 of str `s` for the core, or NULL with a ValueError that names `what`: the core reads
 * C strings, so an embedded NUL cut "l1d.ways\0junk" to "l1d.ways" and set that key, silently, and
 * a lone surrogate raised a UnicodeEncodeError that named nothing. */
static const char *c_text(PyObject *s, const char *what)
{
    Py_ssize_t len;
    const char *t = PyUnicode_AsUTF8AndSize(s, &len);
    if (!t) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s %R is not valid UTF-8", what, s);
        return NULL;
    }
    if ((size_t)len != strlen(t)) {
        PyErr_Format(PyExc_ValueError, "%s %R contains a NUL character", what, s);
        return NULL;
    }
    return t;
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
        if (!PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "policy parameter names must be strings");
            return -1;
        }
        const char *name = c_text(key, "policy parameter name");
        if (!name)
            return -1;
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
        if (v == -1.0 && PyErr_Occurred()) {
            /* A complex, an array of several numbers, an int beyond a double: name the option,
             * which Python's own message ("must be real number, not complex") leaves out. */
            const gcx_param_spec *spec = &policy->params[found];
            int too_big = PyErr_ExceptionMatches(PyExc_OverflowError);
            PyErr_Clear();
            if (too_big) {
                PyErr_Format(PyExc_ValueError, "policy %s: %s must be between %s and %s, got an integer too large "
                             "for a float", policy->name, name, gcx_num(spec->min_value).s,
                             gcx_num(spec->max_value).s);
            } else {
                PyErr_Format(PyExc_TypeError, "option %s of policy '%s' must be a number, got %.100s", name,
                             policy->name, Py_TYPE(value)->tp_name);
            }
            return -1;
        }
        out[found] = v;
    }
    return 0;
}

/* "O&" converter to an unsigned 64-bit integer from any Python integer (numpy's are indexes too),
 * refused with an exception when negative or too large: the "K" format would mask it into another
 * value, a seed into some other seed's run, an address into another address. */
static int u64_converter(PyObject *obj, void *out)
{
    PyObject *index = PyNumber_Index(obj);
    if (!index)
        return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(index);
    Py_DECREF(index);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return 0;
    *(unsigned long long *)out = v;
    return 1;
}

/* `obj`, a Python integer (numpy's too, not a bool) from 0 to `highest`, into *out: 0; NOT_AN_INT or
 * OUT_OF_RANGE otherwise, with no exception set, for the caller to name the argument. The "I", "K"
 * and "L" formats would mask instead (a grid of 2**32 + 196 CTAs ran as 196, one of -1 as 2**32 - 1). */
enum { NOT_AN_INT = -1, OUT_OF_RANGE = -2 };
static int checked_uint(PyObject *obj, unsigned long long highest, unsigned long long *out)
{
    if (PyBool_Check(obj) || !PyIndex_Check(obj))
        return NOT_AN_INT;
    if (!u64_converter(obj, out) || *out > highest) {
        PyErr_Clear();
        return OUT_OF_RANGE;
    }
    return 0;
}

static int seed_converter(PyObject *obj, void *out)
{
    int rc = checked_uint(obj, UINT64_MAX, out);
    if (rc == NOT_AN_INT)
        PyErr_Format(PyExc_TypeError, "seed must be a non-negative integer, got %R", obj);
    else if (rc == OUT_OF_RANGE)
        PyErr_Format(PyExc_ValueError, "seed must be an integer from 0 to 2**64 - 1, got %R", obj);
    return rc == 0;
}

/* A cache_run geometry argument from `lowest` to 2**32 - 1, into *out, or -1 with an error naming it
 * and the value given: the "L" format said only "int too big to convert" (which argument?), and a
 * too large sector_bytes was reported as "cache geometry too large (sets 32, ways 4, ...)". */
static int geometry_arg(PyObject *obj, const char *arg, long long lowest, long long *out)
{
    if (PyBool_Check(obj) || !PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an integer, got %R", arg, obj);
        return -1;
    }
    PyObject *index = PyNumber_Index(obj);
    if (!index)
        return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow < 0 || (overflow == 0 && v < lowest)) {
        PyErr_Format(PyExc_ValueError, lowest ? "%s must be a positive integer, got %R"
                                              : "%s must be positive (or 0 for no sectors), got %R", arg, obj);
        return -1;
    }
    if (overflow > 0 || v > UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s must be at most %lu, got %R", arg, (unsigned long)UINT32_MAX, obj);
        return -1;
    }
    *out = v;
    return 0;
}

static PyObject *py_cache_run(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"addresses", "writes", "sets", "ways", "line_bytes", "policy", "sector_bytes",
                             "write_back", "write_allocate", "index", "seed", "policy_params", NULL};
    PyObject *addr_obj, *writes_obj = Py_None, *policy_params = Py_None;
    PyObject *write_back_obj = Py_True, *write_allocate_obj = Py_True;
    PyObject *sets_obj, *ways_obj, *line_bytes_obj, *sector_bytes_obj = NULL;
    const char *policy_name = "lru", *index = "mod";
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO|sOOOsO&O", kwlist, &addr_obj, &writes_obj, &sets_obj,
                                     &ways_obj, &line_bytes_obj, &policy_name, &sector_bytes_obj, &write_back_obj,
                                     &write_allocate_obj, &index, seed_converter, &seed, &policy_params))
        return NULL;
    /* Real bools only: the "p" format's truth value would make "False", "no" or [0] mean True. */
    if (!PyBool_Check(write_back_obj))
        return PyErr_Format(PyExc_TypeError, "write_back must be a bool, got %R", write_back_obj);
    if (!PyBool_Check(write_allocate_obj))
        return PyErr_Format(PyExc_TypeError, "write_allocate must be a bool, got %R", write_allocate_obj);
    int write_back = write_back_obj == Py_True, write_allocate = write_allocate_obj == Py_True;

    long long sets, ways, line_bytes, sector_bytes = 0;
    if (geometry_arg(sets_obj, "sets", 1, &sets) || geometry_arg(ways_obj, "ways", 1, &ways) ||
        geometry_arg(line_bytes_obj, "line_bytes", 1, &line_bytes) ||
        (sector_bytes_obj && geometry_arg(sector_bytes_obj, "sector_bytes", 0, &sector_bytes)))
        return NULL;
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
    else if (strcmp(index, "fermi") == 0)
        index_fn = GCX_INDEX_FERMI;
    else
        return PyErr_Format(PyExc_ValueError, "index must be 'mod', 'xor' or 'fermi', got '%s'", index);

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


/* ---- timing model ------------------------------------------------------------------------ */

/* Borrow column `key` of kernel dict `kd`: `inner` 0 for a vector of n elements, else an (n, inner)
 * matrix. Errors name the kernel and the column. */
static int get_column(PyObject *kd, int ki, const char *key, enum buf_kind kind, Py_ssize_t n, int inner,
                      Py_buffer *view)
{
    PyObject *obj = PyDict_GetItemString(kd, key);
    if (!obj) {
        PyErr_Format(PyExc_ValueError, "kernel %d: missing column '%s'", ki + 1, key);
        return -1;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "kernel %d: column %s must be a numpy array of %s", ki + 1, key,
                     buf_kind_name(kind));
        return -1;
    }
    const char *problem = NULL;
    if (!PyBuffer_IsContiguous(view, 'C'))
        problem = "must be C-contiguous";
    else if (!buf_kind_ok(kind, view))
        problem = "has the wrong dtype";
    else if (inner == 0 && (view->ndim != 1 || view->shape[0] != n))
        problem = "has the wrong shape";
    else if (inner > 0 && (view->ndim != 2 || view->shape[0] != n || view->shape[1] != inner))
        problem = "has the wrong shape";
    else if (!buf_aligned(view))
        problem = "is not aligned to its items";
    if (problem) {
        PyErr_Format(PyExc_ValueError, "kernel %d: column %s %s (expected %s, %zd rows%s)", ki + 1, key, problem,
                     buf_kind_name(kind), n, inner == GCX_MAX_DST ? " x 2" : inner == GCX_MAX_SRC ? " x 5" : "");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

#define N_COLUMNS 13
typedef struct kernel_buffers {
    Py_buffer v[N_COLUMNS];
    int n_held;
    PyObject *name; /* the name's UTF-8 bytes, kept alive while the core runs */
} kernel_buffers;

static void release_kernels(kernel_buffers *kb, int n)
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < kb[i].n_held; j++)
            PyBuffer_Release(&kb[i].v[j]);
        Py_XDECREF(kb[i].name);
    }
}

/* `obj`, an integer from 0 to 2**32 - 1, into *out; nonzero (no exception set) otherwise. */
static int u32_of(PyObject *obj, uint32_t *out)
{
    unsigned long long v;
    if (checked_uint(obj, UINT32_MAX, &v))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int read_dims(PyObject *kd, int ki, const char *key, uint32_t out[3])
{
    PyObject *obj = PyDict_GetItemString(kd, key);
    if (!obj) {
        PyErr_Format(PyExc_ValueError, "kernel %d: missing %s (a tuple of three integers)", ki + 1, key);
        return -1;
    }
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 3 || u32_of(PyTuple_GET_ITEM(obj, 0), &out[0]) ||
        u32_of(PyTuple_GET_ITEM(obj, 1), &out[1]) || u32_of(PyTuple_GET_ITEM(obj, 2), &out[2])) {
        PyErr_Format(PyExc_ValueError, "kernel %d: %s must be a tuple of three integers from 0 to 2**32 - 1, got %R",
                     ki + 1, key, obj);
        return -1;
    }
    return 0;
}

static int read_u32(PyObject *kd, int ki, const char *key, uint32_t *out)
{
    PyObject *obj = PyDict_GetItemString(kd, key);
    if (!obj) {
        PyErr_Format(PyExc_ValueError, "kernel %d: missing %s (an integer)", ki + 1, key);
        return -1;
    }
    if (u32_of(obj, out)) {
        PyErr_Format(PyExc_ValueError, "kernel %d: %s must be an integer from 0 to 2**32 - 1, got %R", ki + 1, key,
                     obj);
        return -1;
    }
    return 0;
}

static int load_kernel(PyObject *kd, int ki, gcx_kernel *k, kernel_buffers *kb)
{
    memset(k, 0, sizeof *k);
    if (!PyDict_Check(kd)) {
        PyErr_Format(PyExc_TypeError, "kernel %d must be a dict of columns", ki + 1);
        return -1;
    }
    PyObject *name = PyDict_GetItemString(kd, "name");
    if (name && PyUnicode_Check(name)) {
        /* The name only labels the core's messages. A lone surrogate (a file name decoded with
         * surrogateescape names a kernel whose header has none) is written as an escape: strict
         * UTF-8 would fail, and the run went on with that error set, to raise it (or a SystemError)
         * only once the whole simulation was done. */
        kb->name = PyUnicode_AsEncodedString(name, "utf-8", "backslashreplace");
        if (!kb->name)
            return -1;
        k->name = PyBytes_AS_STRING(kb->name);
    }
    if (read_dims(kd, ki, "grid", k->grid) || read_dims(kd, ki, "block", k->block) ||
        read_u32(kd, ki, "nregs", &k->nregs) || read_u32(kd, ki, "shmem_bytes", &k->shmem_bytes))
        return -1;
    PyObject *cta = PyDict_GetItemString(kd, "cta");
    Py_ssize_t n = cta ? PyObject_Length(cta) : -1;
    if (n < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "kernel %d: missing column 'cta'", ki + 1);
        return -1;
    }
    struct { const char *key; enum buf_kind kind; int inner; } cols[N_COLUMNS] = {
        {"cta", BUF_U32, 0}, {"warp", BUF_U16, 0}, {"pc", BUF_U32, 0}, {"op_class", BUF_U8, 0},
        {"space", BUF_U8, 0}, {"flags", BUF_U8, 0}, {"width", BUF_U8, 0}, {"mask", BUF_U32, 0},
        {"dst", BUF_U8, GCX_MAX_DST}, {"src", BUF_U8, GCX_MAX_SRC}, {"addr_offset", BUF_U64, 0},
        {"addresses", BUF_U64, -1}, {NULL, 0, 0},
    };
    for (int j = 0; cols[j].key; j++) {
        Py_buffer *v = &kb->v[kb->n_held];
        if (cols[j].inner < 0) {
            PyObject *obj = PyDict_GetItemString(kd, cols[j].key);
            if (!obj) {
                PyErr_Format(PyExc_ValueError, "kernel %d: missing column 'addresses'", ki + 1);
                return -1;
            }
            char arg[64];
            snprintf(arg, sizeof arg, "kernel %d: addresses", ki + 1);
            if (get_vector(obj, arg, BUF_U64, v) != 0)
                return -1;
        } else if (get_column(kd, ki, cols[j].key, cols[j].kind, n, cols[j].inner, v) != 0) {
            return -1;
        }
        kb->n_held++;
    }
    k->n_insts = (uint64_t)n;
    k->cta = kb->v[0].buf;
    k->warp = kb->v[1].buf;
    k->pc = kb->v[2].buf;
    k->op_class = kb->v[3].buf;
    k->space = kb->v[4].buf;
    k->flags = kb->v[5].buf;
    k->width = kb->v[6].buf;
    k->mask = kb->v[7].buf;
    k->dst = kb->v[8].buf;
    k->src = kb->v[9].buf;
    k->addr_offset = kb->v[10].buf;
    k->addresses = kb->v[11].buf;
    k->n_addrs = (uint64_t)kb->v[11].shape[0];
    return 0;
}

/* Fill a configuration from {dotted key: value}; every key must be known. */
static int read_config(PyObject *dict, gcx_gpu_config *cfg)
{
    gcx_config_defaults(cfg);
    if (!PyDict_Check(dict)) {
        PyErr_SetString(PyExc_TypeError, "config must be a dict of dotted keys");
        return -1;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    gcx_error err = {0};
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (!PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "configuration keys must be strings");
            return -1;
        }
        const char *name = c_text(key, "configuration key");
        if (!name)
            return -1;
        const gcx_key *k = gcx_config_find(name);
        int rc;
        if (PyUnicode_Check(value)) {
            char what[160];
            snprintf(what, sizeof what, "%s: the value", name);
            const char *v = c_text(value, what);
            if (!v)
                return -1;
            rc = k ? gcx_config_set_name(cfg, k, v, &err) : gcx_config_set_param_name(cfg, name, v, &err);
        } else if (PyNumber_Check(value)) {
            double v = PyFloat_AsDouble(value);
            if (v == -1.0 && PyErr_Occurred()) {
                /* Python's message ("int too large to convert to float", "must be real number, not
                 * complex") would not say which key. */
                int too_big = PyErr_ExceptionMatches(PyExc_OverflowError);
                PyErr_Clear();
                if (too_big)
                    PyErr_Format(PyExc_ValueError, "%s: the integer given is too large for a float", name);
                else
                    PyErr_Format(PyExc_TypeError, "%s must be a number, bool or string, got %.100s", name,
                                 Py_TYPE(value)->tp_name);
                return -1;
            }
            rc = k ? gcx_config_set_number(cfg, k, v, &err) : gcx_config_set_param(cfg, name, v, &err);
        } else {
            PyErr_Format(PyExc_TypeError, "%s must be a number, bool or string, got %.100s", name,
                         Py_TYPE(value)->tp_name);
            return -1;
        }
        if (rc) {
            raise_gcx(&err);
            return -1;
        }
    }
    if (gcx_config_check(cfg, &err)) {
        raise_gcx(&err);
        return -1;
    }
    return 0;
}

static int put_u64(PyObject *d, const char *key, uint64_t v)
{
    PyObject *o = PyLong_FromUnsignedLongLong(v);
    int rc = o ? PyDict_SetItemString(d, key, o) : -1;
    Py_XDECREF(o);
    return rc;
}

static PyObject *u64_list(const uint64_t *v, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *o = PyLong_FromUnsignedLongLong(v[i]);
        if (!o) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    return list;
}

static int put_obj(PyObject *d, const char *key, PyObject *o)
{
    int rc = o ? PyDict_SetItemString(d, key, o) : -1;
    Py_XDECREF(o);
    return rc;
}

/* Statistics of a set of caches: the sum, and one list per statistic with a value per cache. */
static int put_cache_stats(PyObject *out, const char *level, gcx_tcache *const *caches, size_t n)
{
    PyObject *sum = PyDict_New(), *per = PyDict_New();
    if (!sum || !per) {
        Py_XDECREF(sum);
        Py_XDECREF(per);
        return -1;
    }
    uint64_t *vals = calloc(n ? n : 1, sizeof *vals); /* zeroed: with n == 0 nothing is written */
    int rc = vals ? 0 : -1;
#define GCX_X(name, doc)                                                                           \
    if (rc == 0) {                                                                                 \
        uint64_t total = 0;                                                                        \
        for (size_t i = 0; i < n; i++)                                                             \
            total += vals[i] = caches[i]->s.name;                                                  \
        rc = put_u64(sum, #name, total);                                                           \
        if (rc == 0)                                                                               \
            rc = put_obj(per, #name, u64_list(vals, n));                                           \
    }
    GCX_TCACHE_STATS(GCX_X)
#undef GCX_X
    uint64_t ha[GCX_HIST_ACCESS] = {0}, hi[GCX_HIST_INTERVAL] = {0}, lines = 0;
    for (size_t i = 0; i < n; i++) {
        for (int b = 0; b < GCX_HIST_ACCESS; b++)
            ha[b] += caches[i]->hist_access[b];
        for (int b = 0; b < GCX_HIST_INTERVAL; b++)
            hi[b] += caches[i]->hist_interval[b];
        lines += caches[i]->c.n_lines;
    }
    if (rc == 0)
        rc = put_obj(sum, "hist_access", u64_list(ha, GCX_HIST_ACCESS));
    if (rc == 0)
        rc = put_obj(sum, "hist_interval", u64_list(hi, GCX_HIST_INTERVAL));
    if (rc == 0)
        rc = put_u64(sum, "lines", lines);
    free(vals);
    char key[64];
    snprintf(key, sizeof key, "%s_per_cache", level);
    if (rc == 0)
        rc = PyDict_SetItemString(out, level, sum);
    if (rc == 0)
        rc = PyDict_SetItemString(out, key, per);
    Py_DECREF(sum);
    Py_DECREF(per);
    return rc;
}

/* Per-line residency of a set of caches as bytes of uint64 (lines x 3: ON, DROWSY, OFF). */
static PyObject *line_residency(gcx_tcache *const *caches, size_t n)
{
    size_t lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += caches[i]->c.n_lines;
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(lines * 3 * sizeof(uint64_t)));
    if (!b)
        return NULL;
    uint64_t *dst = (uint64_t *)PyBytes_AS_STRING(b);
    for (size_t i = 0; i < n; i++) {
        memcpy(dst, caches[i]->resid, caches[i]->c.n_lines * 3 * sizeof(uint64_t));
        dst += caches[i]->c.n_lines * 3;
    }
    return b;
}

static int sink_put(gcx_stat_sink *sink, const char *name, double value)
{
    PyObject *o = PyFloat_FromDouble(value);
    int rc = o ? PyDict_SetItemString((PyObject *)sink->opaque, name, o) : -1;
    Py_XDECREF(o);
    return rc;
}

static PyObject *gpu_results(gcx_gpu *g, int detail)
{
    PyObject *out = PyDict_New();
    if (!out)
        return NULL;
    uint32_t n_sms = (uint32_t)g->cfg.sms, n_parts = (uint32_t)g->cfg.l2_partitions;
    uint64_t warp_insts = 0, thread_insts = 0, lat = 0, loads = 0, ia = 0, im = 0, ih = 0, slat = 0, stores = 0;
    uint64_t l1lat = 0, l1loads = 0, missq_max = 0;
    for (uint32_t i = 0; i < n_sms; i++) {
        if (g->sms[i].l1.missq_max > missq_max)
            missq_max = g->sms[i].l1.missq_max;
        ia += g->sms[i].l1i_accesses;
        im += g->sms[i].l1i_misses;
        ih += g->sms[i].l1i_mshr_hits;
        warp_insts += g->sms[i].warp_insts;
        thread_insts += g->sms[i].thread_insts;
        lat += g->sms[i].load_latency_sum;
        loads += g->sms[i].loads_done;
        slat += g->sms[i].store_ack_latency_sum;
        stores += g->sms[i].stores_acked;
        l1lat += g->sms[i].l1_access_latency_sum;
        l1loads += g->sms[i].l1_loads_done;
    }
    gcx_tcache **l1 = malloc(n_sms * sizeof *l1), **l2 = malloc(n_parts * sizeof *l2);
    int rc = (l1 && l2) ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < n_sms; i++)
        l1[i] = &g->sms[i].l1.tc;
    for (uint32_t p = 0; rc == 0 && p < n_parts; p++)
        l2[p] = &g->l2[p].tc;
    if (rc == 0)
        rc = put_u64(out, "cycles", g->now) || put_u64(out, "warp_insts", warp_insts) ||
             put_u64(out, "thread_insts", thread_insts) || put_u64(out, "loads", loads) ||
             put_u64(out, "load_latency_sum", lat) || put_u64(out, "l1_access_latency_sum", l1lat) ||
             put_u64(out, "l1_access_loads", l1loads) || put_u64(out, "stores_acked", stores) ||
             put_u64(out, "store_ack_latency_sum", slat) || put_u64(out, "requests", g->reqs_made) ||
             put_u64(out, "requests_live", g->reqs_live) || put_u64(out, "l2_prefill_lines", g->dram_prefill_lines) ||
             put_u64(out, "l1i_accesses", ia) || put_u64(out, "l1i_misses", im) || put_u64(out, "l1i_mshr_hits", ih) ||
             put_u64(out, "l1d_miss_queue_max", missq_max);
    if (rc == 0)
        rc = put_cache_stats(out, "l1d", l1, n_sms);
    if (rc == 0)
        rc = put_cache_stats(out, "l2", l2, n_parts);
    if (rc == 0) {
        uint64_t reads = 0, writes = 0, hits = 0, misses = 0, bytes = 0, l2_fails = 0;
        for (uint32_t ch = 0; ch < (uint32_t)g->cfg.dram_channels; ch++) {
            reads += g->dram[ch].reads;
            writes += g->dram[ch].writes;
            hits += g->dram[ch].row_hits;
            misses += g->dram[ch].row_misses;
            bytes += g->dram[ch].bytes;
        }
        for (uint32_t p = 0; p < n_parts; p++)
            l2_fails += g->l2[p].fails;
        rc = put_u64(out, "dram_reads", reads) || put_u64(out, "dram_writes", writes) ||
             put_u64(out, "dram_row_hits", hits) || put_u64(out, "dram_row_misses", misses) ||
             put_u64(out, "dram_bytes", bytes) || put_u64(out, "l2_stalls", l2_fails) ||
             put_u64(out, "icnt_request_flits", g->req_net.flits) ||
             put_u64(out, "icnt_reply_flits", g->reply_net.flits) ||
             put_u64(out, "icnt_packets", g->req_net.packets + g->reply_net.packets) ||
             put_u64(out, "cluster_flits", g->cluster_net.flits);
    }
    if (rc == 0) {
        PyObject *ts = PyDict_New();
        uint64_t *col = malloc((g->ts_n ? g->ts_n : 1) * sizeof *col);
        rc = (ts && col) ? 0 : -1;
#define GCX_X(name)                                                                                \
    if (rc == 0) {                                                                                 \
        for (size_t i = 0; i < g->ts_n; i++)                                                       \
            col[i] = g->ts[i].name;                                                                \
        rc = put_obj(ts, #name, u64_list(col, g->ts_n));                                           \
    }
        GCX_TS_FIELDS(GCX_X)
#undef GCX_X
        free(col);
        if (rc == 0)
            rc = PyDict_SetItemString(out, "timeseries", ts);
        Py_XDECREF(ts);
    }
    if (rc == 0) {
        PyObject *tech = PyDict_New(), *names = PyDict_New();
        rc = (tech && names) ? 0 : -1;
        gcx_stat_sink sink = {.opaque = tech, .put = sink_put};
        for (int kind = 0; rc == 0 && kind < GCX_N_TECH_KINDS; kind++) {
            gcx_tech *t = &g->tech[kind];
            PyObject *nm = PyUnicode_FromString(t->ops->name);
            rc = nm ? PyDict_SetItemString(names, gcx_tech_kind_key(kind), nm) : -1;
            Py_XDECREF(nm);
            if (rc == 0 && t->ops->report)
                t->ops->report(t, &sink);
            if (PyErr_Occurred())
                rc = -1;
        }
        if (rc == 0)
            rc = PyDict_SetItemString(out, "technique_metrics", tech);
        if (rc == 0)
            rc = PyDict_SetItemString(out, "techniques", names);
        Py_XDECREF(tech);
        Py_XDECREF(names);
    }
    if (rc == 0 && detail) {
        rc = put_obj(out, "l1d_line_residency", line_residency(l1, n_sms));
        if (rc == 0)
            rc = put_obj(out, "l2_line_residency", line_residency(l2, n_parts));
    }
    free(l1);
    free(l2);
    if (rc != 0) {
        Py_DECREF(out);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return NULL;
    }
    return out;
}

static PyObject *py_simulate(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"config", "kernels", "memcpys", "seed", "detail", "progress", NULL};
    PyObject *config, *kernels, *memcpys = Py_None, *progress_obj = Py_None, *detail_obj = Py_False;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO&OO", kwlist, &config, &kernels, &memcpys, seed_converter,
                                     &seed, &detail_obj, &progress_obj))
        return NULL;
    /* A real bool only: the "p" format's truth value would make "False", "no" or [0] mean True. */
    if (!PyBool_Check(detail_obj))
        return PyErr_Format(PyExc_TypeError, "detail must be a bool, got %R", detail_obj);
    int detail = detail_obj == Py_True;
    Py_buffer progress;
    int have_progress = progress_obj != Py_None;
    if (have_progress) {
        if (PyObject_GetBuffer(progress_obj, &progress, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0)
            return NULL;
        if (progress.itemsize != 8 || !format_is(progress.format, "QL") || progress.len < 8) {
            PyBuffer_Release(&progress);
            PyErr_SetString(PyExc_TypeError, "progress must be a writable uint64 array of at least one element "
                                             "(instructions issued; a second, set non-zero, stops the run)");
            return NULL;
        }
    }
    gcx_gpu_config cfg;
    if (read_config(config, &cfg) != 0)
        return NULL;
    if (!PyList_Check(kernels)) {
        PyErr_SetString(PyExc_TypeError, "kernels must be a list of dicts");
        return NULL;
    }
    Py_ssize_t nk = PyList_GET_SIZE(kernels);
    Py_ssize_t nm = memcpys == Py_None ? 0 : PyObject_Length(memcpys);
    if (nm < 0)
        return NULL;
    gcx_kernel *ks = calloc(nk ? (size_t)nk : 1, sizeof *ks);
    kernel_buffers *kb = calloc(nk ? (size_t)nk : 1, sizeof *kb);
    gcx_memcpy *mc = calloc(nm ? (size_t)nm : 1, sizeof *mc);
    if (!ks || !kb || !mc) {
        free(ks);
        free(kb);
        free(mc);
        return PyErr_NoMemory();
    }
    PyObject *result = NULL;
    int loaded = 0;
    for (; loaded < nk; loaded++)
        if (load_kernel(PyList_GET_ITEM(kernels, loaded), (int)loaded, &ks[loaded], &kb[loaded]) != 0) {
            loaded++; /* release what this kernel already holds */
            goto done;
        }
    for (Py_ssize_t i = 0; i < nm; i++) {
        PyObject *item = PySequence_GetItem(memcpys, i);
        unsigned long long before = 0, dst = 0, bytes = 0;
        int ok = item && PyArg_ParseTuple(item, "O&O&O&", u64_converter, &before, u64_converter, &dst,
                                          u64_converter, &bytes) && before <= UINT32_MAX;
        Py_XDECREF(item);
        if (!ok) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "memcpy %zd must be (kernel index, address, bytes)", i);
            goto done;
        }
        mc[i] = (gcx_memcpy){.before_kernel = (uint32_t)before, .dst = dst, .bytes = bytes};
    }
    {
        gcx_workload wl = {.kernels = ks, .n_kernels = (uint32_t)nk, .memcpys = mc, .n_memcpys = (uint32_t)nm};
        gcx_gpu *gpu = calloc(1, sizeof *gpu);
        gcx_error err = {0};
        int rc;
        if (!gpu) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        rc = gcx_workload_prepare(&wl, &err);
        if (rc == GCX_OK)
            rc = gcx_gpu_init(gpu, &cfg, &wl, seed, &err);
        if (rc == GCX_OK) {
            gpu->progress = have_progress ? (volatile uint64_t *)progress.buf : NULL;
            /* progress[1], when the array has it, is a stop request another thread may set. */
            gpu->stop = have_progress && progress.len >= 16 ? (volatile uint64_t *)progress.buf + 1 : NULL;
            rc = gcx_gpu_run(gpu, &err);
            gpu->progress = gpu->stop = NULL;
        }
        Py_END_ALLOW_THREADS
        if (rc == GCX_OK)
            result = gpu_results(gpu, detail);
        else
            raise_gcx(&err);
        gcx_gpu_free(gpu);
        free(gpu);
        gcx_workload_release(&wl);
    }
done:
    if (have_progress)
        PyBuffer_Release(&progress);
    release_kernels(kb, (int)loaded);
    free(ks);
    free(kb);
    free(mc);
    return result;
}

static PyObject *py_check_config(PyObject *self, PyObject *config)
{
    gcx_gpu_config cfg;
    if (read_config(config, &cfg) != 0)
        return NULL;
    Py_RETURN_NONE;
}

static const char *key_type_name(int type)
{
    static const char *const names[] = {"int", "float", "bool", "choice", "policy", "technique"};
    return names[type];
}

/* The configuration schema: every core key and every technique parameter. */
static PyObject *py_config_schema(PyObject *self, PyObject *noargs)
{
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    for (size_t i = 0; i < gcx_n_core_keys; i++) {
        const gcx_key *k = &gcx_core_keys[i];
        PyObject *choices;
        if (k->type == GCX_KEY_CHOICE) {
            choices = choice_list(k->choices);
        } else if (k->type == GCX_KEY_POLICY) {
            choices = PyList_New(0);
            for (const gcx_policy *const *p = gcx_policies; choices && *p; p++) {
                if (list_append_new(choices, PyUnicode_FromString((*p)->name)) != 0)
                    Py_CLEAR(choices);
            }
        } else if (k->type == GCX_KEY_TECHNIQUE) {
            choices = PyList_New(0);
            for (const gcx_technique *const *t = gcx_techniques; choices && *t; t++) {
                if (strcmp(gcx_tech_kind_key((*t)->kind), k->choices) != 0)
                    continue;
                if (list_append_new(choices, PyUnicode_FromString((*t)->name)) != 0)
                    Py_CLEAR(choices);
            }
        } else {
            choices = Py_NewRef(Py_None);
        }
        if (!choices) {
            Py_DECREF(out);
            return NULL;
        }
        PyObject *d = Py_BuildValue("{s:s,s:s,s:d,s:d,s:d,s:N,s:s,s:O}", "name", k->name, "type",
                                    key_type_name(k->type), "default", k->default_value, "min", k->min_value, "max",
                                    k->max_value, "choices", choices, "doc", k->doc, "technique", Py_None);
        if (list_append_new(out, d) != 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    for (int lv = 0; lv < 2; lv++)
        for (const gcx_policy *const *pol = gcx_policies; *pol; pol++)
            for (int i = 0; i < (*pol)->n_params; i++) {
                const gcx_param_spec *p = &(*pol)->params[i];
                PyObject *d = Py_BuildValue("{s:N,s:s,s:d,s:d,s:d,s:O,s:N,s:O}", "name",
                                            PyUnicode_FromFormat("%s.%s.%s", gcx_policy_levels[lv], (*pol)->name, p->name),
                                            "type", p->is_integer == 2 ? "bool" : p->is_integer ? "int" : "float",
                                            "default", p->default_value, "min", p->min_value, "max", p->max_value,
                                            "choices", Py_None, "doc",
                                            PyUnicode_FromFormat("%s (%s replacement policy of the %s)", p->doc,
                                                                 (*pol)->name, lv ? "L2" : "L1D"),
                                            "technique", Py_None);
                if (list_append_new(out, d) != 0) {
                    Py_DECREF(out);
                    return NULL;
                }
            }
    for (const gcx_technique *const *t = gcx_techniques; *t; t++) {
        for (int i = 0; i < (*t)->n_params; i++) {
            const gcx_param_spec *p = &(*t)->params[i];
            const char *names = gcx_param_choices(*t, i);
            PyObject *choices = choice_list(names);
            const char *type = names ? "choice" : p->is_integer == 2 ? "bool" : p->is_integer ? "int" : "float";
            PyObject *d = choices ? Py_BuildValue("{s:s,s:s,s:d,s:d,s:d,s:N,s:s,s:s}", "name", p->name, "type", type,
                                                  "default", p->default_value, "min", p->min_value, "max",
                                                  p->max_value, "choices", choices, "doc", p->doc, "technique",
                                                  (*t)->name)
                                  : NULL;
            if (list_append_new(out, d) != 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
    }
    return out;
}

static PyObject *py_techniques(PyObject *self, PyObject *noargs)
{
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    for (const gcx_technique *const *t = gcx_techniques; *t; t++) {
        PyObject *params = param_specs_to_list((*t)->params, (*t)->n_params, (*t)->param_choices);
        PyObject *d = params ? Py_BuildValue("{s:s,s:s,s:s,s:N}", "name", (*t)->name, "kind",
                                             gcx_tech_kind_key((*t)->kind), "doc", (*t)->doc, "params", params)
                             : NULL;
        if (list_append_new(out, d) != 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyObject *py_tcache_stat_docs(PyObject *self, PyObject *noargs)
{
    PyObject *d = PyDict_New();
#define GCX_X(name, doc)                                                                           \
    if (d) {                                                                                       \
        PyObject *v = PyUnicode_FromString(doc);                                                   \
        if (!v || PyDict_SetItemString(d, #name, v) != 0)                                          \
            Py_CLEAR(d);                                                                           \
        Py_XDECREF(v);                                                                             \
    }
    GCX_TCACHE_STATS(GCX_X)
#undef GCX_X
    return d;
}

/* ---- trace parser ---------------------------------------------------------------------- */

/* A block of memory malloc'd by the core, exported through the buffer protocol so numpy can wrap
 * it (numpy.frombuffer) without a copy; freed when the last array using it goes away. */
typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t len;
} OwnedBufferObject;

static int owned_buffer_get(PyObject *self, Py_buffer *view, int flags)
{
    OwnedBufferObject *b = (OwnedBufferObject *)self;
    return PyBuffer_FillInfo(view, self, b->data, b->len, 0, flags);
}

static void owned_buffer_dealloc(PyObject *self)
{
    free(((OwnedBufferObject *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs owned_buffer_procs = {.bf_getbuffer = owned_buffer_get};

static PyTypeObject OwnedBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpucachex._core.OwnedBuffer",
    .tp_basicsize = sizeof(OwnedBufferObject),
    .tp_dealloc = owned_buffer_dealloc,
    .tp_as_buffer = &owned_buffer_procs,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory filled by the C core, for numpy.frombuffer.",
};

/* Wrap `data` (len bytes, or NULL when empty); takes ownership even on failure. */
static PyObject *owned_buffer(void *data, size_t len)
{
    if (!data) {
        data = malloc(1); /* a valid pointer for an empty array */
        len = 0;
        if (!data)
            return PyErr_NoMemory();
    }
    OwnedBufferObject *b = PyObject_New(OwnedBufferObject, &OwnedBufferType);
    if (!b) {
        free(data);
        return NULL;
    }
    b->data = data;
    b->len = (Py_ssize_t)len;
    return (PyObject *)b;
}

typedef struct {
    PyObject_HEAD
    gcx_opcodes opcodes; /* one table for every kernel of a trace */
    gcx_traceg parser;
    int have_opcodes;
    int active; /* parser holds a kernel file in progress */
    int busy;   /* a feed runs with the GIL released */
} TraceParserObject;

static int trace_parser_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    TraceParserObject *t = (TraceParserObject *)self;
    if (!PyArg_ParseTuple(args, ":TraceParser") || (kwargs && PyDict_Size(kwargs))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "TraceParser() takes no arguments");
        return -1;
    }
    if (t->have_opcodes)
        return 0;
    gcx_error err = {0};
    if (gcx_opcodes_init(&t->opcodes, &err) != GCX_OK) {
        raise_gcx(&err);
        return -1;
    }
    t->have_opcodes = 1;
    return 0;
}

static void trace_parser_dealloc(PyObject *self)
{
    TraceParserObject *t = (TraceParserObject *)self;
    if (t->active)
        gcx_traceg_free(&t->parser);
    if (t->have_opcodes)
        gcx_opcodes_free(&t->opcodes);
    Py_TYPE(self)->tp_free(self);
}

static int trace_parser_ready(TraceParserObject *t, int need_active)
{
    if (!t->have_opcodes) {
        PyErr_SetString(PyExc_RuntimeError, "TraceParser is not initialised");
        return 0;
    }
    if (t->busy) {
        PyErr_SetString(PyExc_RuntimeError, "TraceParser is in use by another thread");
        return 0;
    }
    if (need_active && !t->active) {
        PyErr_SetString(PyExc_RuntimeError, "TraceParser: call begin(file) first");
        return 0;
    }
    return 1;
}

static PyObject *trace_parser_begin(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"file", "allow_missing_ctas", NULL};
    TraceParserObject *t = (TraceParserObject *)self;
    PyObject *file = NULL;
    int allow_missing = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|p", kwlist, PyUnicode_FSConverter, &file, &allow_missing))
        return NULL;
    if (!trace_parser_ready(t, 0)) {
        Py_DECREF(file);
        return NULL;
    }
    if (t->active) {
        gcx_traceg_free(&t->parser);
        t->active = 0;
    }
    gcx_error err = {0};
    int rc = gcx_traceg_init(&t->parser, PyBytes_AS_STRING(file), &t->opcodes,
                             allow_missing ? GCX_TRACEG_ALLOW_MISSING_CTAS : 0, &err);
    Py_DECREF(file);
    if (rc != GCX_OK)
        return raise_gcx(&err);
    t->active = 1;
    Py_RETURN_NONE;
}

static PyObject *trace_parser_feed(PyObject *self, PyObject *data)
{
    TraceParserObject *t = (TraceParserObject *)self;
    if (!trace_parser_ready(t, 1))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) != 0)
        return NULL;
    gcx_error err = {0};
    int rc;
    t->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = gcx_traceg_feed(&t->parser, view.buf, (size_t)view.len, &err);
    Py_END_ALLOW_THREADS
    t->busy = 0;
    PyBuffer_Release(&view);
    if (rc != GCX_OK)
        return raise_gcx(&err);
    Py_RETURN_NONE;
}

/* dict[key] = value, stealing value; -1 on failure. */
static int set_item(PyObject *d, const char *key, PyObject *value)
{
    if (!value)
        return -1;
    int rc = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *optional_u64(const gcx_traceg_header *h, uint32_t bit, uint64_t v)
{
    if (!(h->present & bit))
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(v);
}

static PyObject *optional_text(const char *s)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

static PyObject *columns_dict(gcx_traceg_columns *k)
{
    struct {
        const char *name;
        void *data;
        size_t bytes;
    } cols[] = {
        {"cta", k->cta, k->n_insts * sizeof *k->cta},
        {"warp", k->warp, k->n_insts * sizeof *k->warp},
        {"pc", k->pc, k->n_insts * sizeof *k->pc},
        {"opcode", k->opcode, k->n_insts * sizeof *k->opcode},
        {"mask", k->mask, k->n_insts * sizeof *k->mask},
        {"width", k->width, k->n_insts * sizeof *k->width},
        {"dst", k->dst, k->n_insts * GCX_TRACEG_MAX_DST},
        {"src", k->src, k->n_insts * GCX_TRACEG_MAX_SRC},
        {"addr_offset", k->addr_offset, k->n_insts * sizeof *k->addr_offset},
        {"addresses", k->addresses, k->n_addresses * sizeof *k->addresses},
    };
    size_t n = sizeof cols / sizeof *cols, i = 0;
    PyObject *d = PyDict_New();
    for (; d && i < n; i++) {
        PyObject *buf = owned_buffer(cols[i].data, cols[i].bytes);
        if (set_item(d, cols[i].name, buf) != 0) {
            Py_CLEAR(d);
            i++;
            break;
        }
    }
    for (; i < n; i++) /* not handed over because of an error */
        free(cols[i].data);
    return d;
}

static PyObject *trace_parser_finish(PyObject *self, PyObject *noargs)
{
    TraceParserObject *t = (TraceParserObject *)self;
    if (!trace_parser_ready(t, 1))
        return NULL;
    gcx_error err = {0};
    int rc;
    t->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = gcx_traceg_finish(&t->parser, &err);
    Py_END_ALLOW_THREADS
    t->busy = 0;
    if (rc != GCX_OK)
        return raise_gcx(&err);
    const gcx_traceg_header *h = &t->parser.header;
    gcx_traceg_columns cols;
    gcx_traceg_take_columns(&t->parser, &cols);
    PyObject *columns = columns_dict(&cols);
    PyObject *d = columns ? PyDict_New() : NULL;
    if (!d)
        Py_XDECREF(columns);
    int ok = d && set_item(d, "columns", columns) == 0;
    ok = ok && set_item(d, "kernel_name", optional_text(h->kernel_name)) == 0 &&
         set_item(d, "kernel_id", (h->present & GCX_HDR_KERNEL_ID) ? PyLong_FromLongLong(h->kernel_id)
                                                                    : Py_NewRef(Py_None)) == 0 &&
         set_item(d, "grid", Py_BuildValue("(III)", h->grid[0], h->grid[1], h->grid[2])) == 0 &&
         set_item(d, "block", Py_BuildValue("(III)", h->block[0], h->block[1], h->block[2])) == 0 &&
         set_item(d, "shmem", optional_u64(h, GCX_HDR_SHMEM, h->shmem)) == 0 &&
         set_item(d, "nregs", optional_u64(h, GCX_HDR_NREGS, h->nregs)) == 0 &&
         set_item(d, "binary_version", optional_u64(h, GCX_HDR_BINARY_VERSION, h->binary_version)) == 0 &&
         set_item(d, "cuda_stream_id", optional_u64(h, GCX_HDR_STREAM_ID, h->cuda_stream_id)) == 0 &&
         set_item(d, "shmem_base_addr", optional_u64(h, GCX_HDR_SHMEM_BASE, h->shmem_base)) == 0 &&
         set_item(d, "local_mem_base_addr", optional_u64(h, GCX_HDR_LOCAL_BASE, h->local_base)) == 0 &&
         set_item(d, "nvbit_version", optional_text(h->nvbit_version)) == 0 &&
         set_item(d, "tracer_version", optional_u64(h, GCX_HDR_TRACER_VERSION, (uint64_t)h->tracer_version)) == 0 &&
         set_item(d, "lineinfo", optional_u64(h, GCX_HDR_LINEINFO, (uint64_t)h->lineinfo)) == 0 &&
         set_item(d, "thread_blocks", PyLong_FromUnsignedLongLong(t->parser.thread_blocks)) == 0 &&
         set_item(d, "n_insts", PyLong_FromSize_t(cols.n_insts)) == 0 &&
         set_item(d, "n_addresses", PyLong_FromSize_t(cols.n_addresses)) == 0;
    gcx_traceg_free(&t->parser);
    t->active = 0;
    if (!ok) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *trace_parser_opcodes(PyObject *self, PyObject *noargs)
{
    TraceParserObject *t = (TraceParserObject *)self;
    if (!trace_parser_ready(t, 0))
        return NULL;
    PyObject *list = PyList_New(t->opcodes.count);
    for (uint32_t i = 0; list && i < t->opcodes.count; i++) {
        PyObject *s = PyUnicode_DecodeASCII(t->opcodes.names[i], t->opcodes.lens[i], "replace");
        if (!s) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, s);
    }
    return list;
}

static PyMethodDef trace_parser_methods[] = {
    {"begin", (PyCFunction)(void (*)(void))trace_parser_begin, METH_VARARGS | METH_KEYWORDS,
     "begin(file, allow_missing_ctas=False): start a kernel file; `file` names it in error messages."},
    {"feed", trace_parser_feed, METH_O, "feed(chunk): parse the next bytes of the file (any bytes-like object)."},
    {"finish", trace_parser_finish, METH_NOARGS,
     "finish() -> dict: end of the file; header fields and the columns as OwnedBuffer objects."},
    {"opcodes", trace_parser_opcodes, METH_NOARGS, "opcodes() -> list of opcode names, in index order."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TraceParserType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpucachex._core.TraceParser",
    .tp_basicsize = sizeof(TraceParserObject),
    .tp_dealloc = trace_parser_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Streaming .traceg parser: begin(file), feed(chunk)..., finish() per kernel file; one opcode "
              "table for all the kernels it parses.",
    .tp_methods = trace_parser_methods,
    .tp_init = trace_parser_init,
    .tp_new = PyType_GenericNew,
};


/* Borrow a C-contiguous array of unsigned integers of `itemsize` bytes with `n` elements (n < 0:
 * any) from `obj`; on success the caller must PyBuffer_Release. */
static int get_unsigned(PyObject *obj, const char *arg, Py_ssize_t itemsize, Py_ssize_t n, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous numpy array of uint%zd, got %.100s", arg,
                     itemsize * 8, Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (view->itemsize != itemsize || !format_is(view->format, "BHILQ")) {
        PyErr_Format(PyExc_TypeError, "%s must have dtype uint%zd, got buffer format '%s' (itemsize %zd)", arg,
                     itemsize * 8, view->format ? view->format : "B", view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    if (n >= 0 && view->len / itemsize != n) {
        PyErr_Format(PyExc_ValueError, "%s has %zd elements, expected %zd", arg, view->len / itemsize, n);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *py_check_kernel(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"cta", "warp", "opcode", "op_class", "space", "mask", "width", "addr_offset",
                             "n_addresses", "grid_ctas", "warps_per_cta", "n_opcodes", "n_op_classes", "n_spaces",
                             NULL};
    PyObject *objs[8], *counts[6];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOOOOO", kwlist, &objs[0], &objs[1], &objs[2], &objs[3],
                                     &objs[4], &objs[5], &objs[6], &objs[7], &counts[0], &counts[1], &counts[2],
                                     &counts[3], &counts[4], &counts[5]))
        return NULL;
    /* Checked, not masked: a grid of -1 CTAs read as 2**64 - 1 let any CTA id pass, and 2**32 + 5
     * memory spaces read as 5. */
    static const unsigned long long highest[6] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT32_MAX,
                                                  UINT32_MAX};
    unsigned long long v[6];
    for (int i = 0; i < 6; i++) {
        int rc = checked_uint(counts[i], highest[i], &v[i]);
        if (rc == NOT_AN_INT)
            return PyErr_Format(PyExc_TypeError, "%s must be an integer, got %R", kwlist[8 + i], counts[i]);
        if (rc == OUT_OF_RANGE)
            return PyErr_Format(PyExc_ValueError, "%s must be an integer from 0 to %llu, got %R", kwlist[8 + i],
                                highest[i], counts[i]);
    }
    unsigned long long n_addresses = v[0], grid_ctas = v[1], warps_per_cta = v[2], n_opcodes = v[3];
    unsigned int n_op_classes = (unsigned int)v[4], n_spaces = (unsigned int)v[5];
    static const Py_ssize_t sizes[8] = {4, 2, 2, 1, 1, 4, 1, 8};
    Py_buffer views[8];
    int got = 0;
    Py_ssize_t n = -1;
    for (; got < 8; got++) {
        if (get_unsigned(objs[got], kwlist[got], sizes[got], n, &views[got]) != 0)
            break;
        n = views[got].len / sizes[got];
    }
    PyObject *result = NULL;
    if (got == 8) {
        gcx_kernel_view k = {
            .n_insts = (size_t)n, .n_addresses = (size_t)n_addresses,
            .cta = views[0].buf, .warp = views[1].buf, .opcode = views[2].buf, .op_class = views[3].buf,
            .space = views[4].buf, .mask = views[5].buf, .width = views[6].buf, .addr_offset = views[7].buf,
            .grid_ctas = grid_ctas, .warps_per_cta = warps_per_cta, .n_opcodes = n_opcodes,
            .n_op_classes = n_op_classes, .n_spaces = n_spaces,
        };
        gcx_error err = {0};
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = gcx_kernel_check(&k, &err);
        Py_END_ALLOW_THREADS
        result = rc == GCX_OK ? Py_NewRef(Py_None) : raise_gcx(&err);
    }
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&views[i]);
    return result;
}

/* ---- module ---------------------------------------------------------------------------- */

static PyMethodDef core_methods[] = {
    {"policies", py_policies, METH_NOARGS, "Replacement policies known to the core, with their parameters."},
    {"cache_stat_docs", py_cache_stat_docs, METH_NOARGS, "Name -> meaning of every cache counter."},
    {"cache_run", (PyCFunction)(void (*)(void))py_cache_run, METH_VARARGS | METH_KEYWORDS,
     "cache_run(addresses, writes, sets, ways, line_bytes, policy='lru', sector_bytes=0, write_back=True, "
     "write_allocate=True, index='mod', seed=0, policy_params=None) -> dict of counters"},
    {"simulate", (PyCFunction)(void (*)(void))py_simulate, METH_VARARGS | METH_KEYWORDS,
     "simulate(config, kernels, memcpys=None, seed=0, detail=False, progress=None) -> dict of results\n\n"
     "progress: a writable uint64 array; element 0 receives the instructions issued so far, and element 1, if\n"
     "present, stops the run with KeyboardInterrupt when another thread sets it non-zero."},
    {"check_config", py_check_config, METH_O, "Raise ValueError/TypeError if a configuration dict is invalid."},
    {"config_schema", py_config_schema, METH_NOARGS, "Every configuration key with its type, default and range."},
    {"techniques", py_techniques, METH_NOARGS, "Techniques known to the core, by kind, with their parameters."},
    {"cache_stat_names", py_tcache_stat_docs, METH_NOARGS, "Statistics of each cache of the timing model."},
    {"check_kernel", (PyCFunction)(void (*)(void))py_check_kernel, METH_VARARGS | METH_KEYWORDS,
     "check_kernel(cta, warp, opcode, op_class, space, mask, width, addr_offset, n_addresses, grid_ctas, "
     "warps_per_cta, n_opcodes, n_op_classes, n_spaces): raise ValueError naming the first row that breaks "
     "the Kernel rules (ranges, (CTA, warp) order, address offsets)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_core",
    .m_doc = "gpucachex C simulation core.",
    .m_size = -1,
    .m_methods = core_methods,
};

PyMODINIT_FUNC PyInit__core(void)
{
    /* A policy or technique added to a registry beyond what the core's fixed arrays hold would
     * silently run with wrong parameters: refuse to load instead, saying which limit to raise. */
    gcx_error err;
    if (gcx_policy_list_check(gcx_policies, &err) != GCX_OK || gcx_technique_list_check(gcx_techniques, &err) != GCX_OK) {
        PyErr_Format(PyExc_ImportError, "gpucachex._core: %s", err.msg);
        return NULL;
    }
    if (PyType_Ready(&OwnedBufferType) < 0 || PyType_Ready(&TraceParserType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m)
        return NULL;
    Py_INCREF(&TraceParserType);
    if (PyModule_AddObject(m, "TraceParser", (PyObject *)&TraceParserType) < 0) {
        Py_DECREF(&TraceParserType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
