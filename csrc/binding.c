/* The CPython binding of the C core, and the only C file that includes Python.h: it parses
 * arguments, borrows numpy buffers without copying, runs plain C with the GIL released, and
 * converts results to Python objects. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "cache/cache.h"
#include "gcx.h"
#include "policies/policies.h"
#include "trace/check.h"
#include "trace/traceg.h"

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
    PyObject *objs[8];
    unsigned long long n_addresses, grid_ctas, warps_per_cta, n_opcodes;
    unsigned int n_op_classes, n_spaces;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOKKKKII", kwlist, &objs[0], &objs[1], &objs[2], &objs[3],
                                     &objs[4], &objs[5], &objs[6], &objs[7], &n_addresses, &grid_ctas,
                                     &warps_per_cta, &n_opcodes, &n_op_classes, &n_spaces))
        return NULL;
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
