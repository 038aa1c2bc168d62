/*
 * The producer's hot half in C (lanes.client._open_batches_c): what every send touches.
 *
 * Same contract as the pure-Python reference, lanes/client/_open_batches_py.py, which documents
 * it; tests/unit/test_open_batches.py checks the two against each other. Per record, no Python
 * code runs here but the accumulator's hooks (a new batch, a full batch, a partition the key's
 * hash does not choose) and the future's constructor.
 *
 * The lock: OpenBatches owns a lock of this module's own type (acquire/release, a context
 * manager, as threading.Lock; threading.Condition takes it), so the hot path takes and drops it
 * without a Python call. It guards the open batches, the buffered bytes, the closed flag and the
 * accumulator's queues; the hooks run with it held and must not take it.
 *
 * murmur3_32 is MurmurHash3_x86_32 (Austin Appleby's public-domain reference), the hash mmh3
 * computes for the partitioner (lanes.protocol.partitioner.partition_for_key); the tests check it
 * against mmh3 on random keys.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <stdint.h>
#include <time.h>
#include <structmember.h>

/* ------------------------------------------------------------------------------------------ */
/* murmur3_32                                                                                 */

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static uint32_t murmur3_32(const unsigned char *data, Py_ssize_t length, uint32_t seed) {
    const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
    uint32_t h = seed;
    Py_ssize_t blocks = length / 4;
    for (Py_ssize_t i = 0; i < blocks; i++) {
        const unsigned char *p = data + i * 4;
        uint32_t k = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5 + 0xe6546b64;
    }
    const unsigned char *tail = data + blocks * 4;
    uint32_t k = 0;
    switch (length & 3) {
        case 3:
            k ^= (uint32_t)tail[2] << 16;
            /* fall through */
        case 2:
            k ^= (uint32_t)tail[1] << 8;
            /* fall through */
        case 1:
            k ^= tail[0];
            k *= c1;
            k = rotl32(k, 15);
            k *= c2;
            h ^= k;
    }
    h ^= (uint32_t)length;
    h ^= h >> 16;
    h *= 0x85ebca6b;
    h ^= h >> 13;
    h *= 0xc2b2ae35;
    h ^= h >> 16;
    return h;
}

static PyObject *murmur3_32_py(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    uint32_t h = murmur3_32(view.buf, view.len, 0);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(h);
}

/* ------------------------------------------------------------------------------------------ */
/* Lock                                                                                       */

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    int locked;
} LockObject;

/* Blocks (without the GIL) until acquired: 1 acquired, 0 not within timeout_us (-1: forever),
 * -1 a signal handler raised meanwhile (as threading.Lock, a wait can be interrupted; a timed
 * wait starts again after a signal). */
static int lock_take(LockObject *self, PY_TIMEOUT_T timeout_us) {
    int acquired = PyThread_acquire_lock(self->lock, NOWAIT_LOCK);
    if (!acquired && timeout_us != 0) {
        PyLockStatus status;
        do {
            Py_BEGIN_ALLOW_THREADS
            status = PyThread_acquire_lock_timed(self->lock, timeout_us, 1);
            Py_END_ALLOW_THREADS
            if (status == PY_LOCK_INTR && Py_MakePendingCalls() < 0) {
                return -1;
            }
        } while (status == PY_LOCK_INTR);
        acquired = status == PY_LOCK_ACQUIRED;
    }
    if (acquired) {
        self->locked = 1;
    }
    return acquired;
}

static void lock_drop(LockObject *self) {
    self->locked = 0;
    PyThread_release_lock(self->lock);
}

static PyObject *Lock_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
        return NULL;
    }
    LockObject *self = (LockObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    return (PyObject *)self;
}

static void Lock_dealloc(LockObject *self) {
    if (self->lock != NULL) {
        if (self->locked) {
            PyThread_release_lock(self->lock);
        }
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Lock_acquire(LockObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout_s = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pd:acquire", names, &blocking, &timeout_s)) {
        return NULL;
    }
    if (!blocking && timeout_s != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout_s < 0 && timeout_s != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    PY_TIMEOUT_T timeout_us = !blocking ? 0 : timeout_s < 0 ? -1 : (PY_TIMEOUT_T)(timeout_s * 1e6);
    if (timeout_us > PY_TIMEOUT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "timeout value is too large");
        return NULL;
    }
    int acquired = lock_take(self, timeout_us);
    return acquired < 0 ? NULL : PyBool_FromLong(acquired);
}

static PyObject *Lock_release(LockObject *self, PyObject *unused) {
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    lock_drop(self);
    Py_RETURN_NONE;
}

static PyObject *Lock_exit(LockObject *self, PyObject *args) { return Lock_release(self, NULL); }

static PyObject *Lock_locked(LockObject *self, PyObject *unused) { return PyBool_FromLong(self->locked); }

static PyMethodDef Lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))Lock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1) -> bool, as threading.Lock"},
    {"release", (PyCFunction)Lock_release, METH_NOARGS, "release()"},
    {"locked", (PyCFunction)Lock_locked, METH_NOARGS, "locked() -> bool"},
    {"__enter__", (PyCFunction)(void (*)(void))Lock_acquire, METH_VARARGS | METH_KEYWORDS, "acquire()"},
    {"__exit__", (PyCFunction)Lock_exit, METH_VARARGS, "release()"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lanes.client._open_batches_c.Lock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A lock as threading.Lock, which OpenBatches takes without a Python call.",
    .tp_new = Lock_new,
    .tp_dealloc = (destructor)Lock_dealloc,
    .tp_methods = Lock_methods,
};

/* ------------------------------------------------------------------------------------------ */
/* FutureFields: the fields of a record's future (RecordFuture's base), filled here without a   */
/* Python call                                                                                */

typedef struct {
    PyObject_HEAD
    PyObject *outcome;
    PyObject *topic;
    PyObject *partition;
    PyObject *index;
    PyObject *timestamp;
} FutureFieldsObject;

static PyObject *FutureFields_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *outcome, *topic, *partition, *index, *timestamp;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "a future takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, type->tp_name, 5, 5, &outcome, &topic, &partition, &index, &timestamp)) {
        return NULL;
    }
    FutureFieldsObject *self = (FutureFieldsObject *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->outcome = Py_NewRef(outcome);
        self->topic = Py_NewRef(topic);
        self->partition = Py_NewRef(partition);
        self->index = Py_NewRef(index);
        self->timestamp = Py_NewRef(timestamp);
    }
    return (PyObject *)self;
}

static int FutureFields_traverse(FutureFieldsObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->outcome);
    Py_VISIT(self->topic);
    Py_VISIT(self->partition);
    Py_VISIT(self->index);
    Py_VISIT(self->timestamp);
    return 0;
}

static int FutureFields_clear(FutureFieldsObject *self) {
    Py_CLEAR(self->outcome);
    Py_CLEAR(self->topic);
    Py_CLEAR(self->partition);
    Py_CLEAR(self->index);
    Py_CLEAR(self->timestamp);
    return 0;
}

/* For a subclass's instance (RecordFuture) subtype_dealloc calls this and drops the type. */
static void FutureFields_dealloc(FutureFieldsObject *self) {
    PyObject_GC_UnTrack(self);
    FutureFields_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef FutureFields_members[] = {
    {"_outcome", T_OBJECT_EX, offsetof(FutureFieldsObject, outcome), READONLY, "the batch's shared outcome"},
    {"_topic", T_OBJECT_EX, offsetof(FutureFieldsObject, topic), READONLY, "the record's topic"},
    {"_partition", T_OBJECT_EX, offsetof(FutureFieldsObject, partition), READONLY, "the record's partition"},
    {"_index", T_OBJECT_EX, offsetof(FutureFieldsObject, index), READONLY, "the record's index in its batch"},
    {"_timestamp", T_OBJECT_EX, offsetof(FutureFieldsObject, timestamp), READONLY, "the record's timestamp"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject FutureFieldsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lanes.client._open_batches_c.FutureFields",
    .tp_basicsize = sizeof(FutureFieldsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "FutureFields(outcome, topic, partition, index, timestamp): a record future's fields.",
    .tp_new = FutureFields_new,
    .tp_dealloc = (destructor)FutureFields_dealloc,
    .tp_traverse = (traverseproc)FutureFields_traverse,
    .tp_clear = (inquiry)FutureFields_clear,
    .tp_members = FutureFields_members,
};

/* ------------------------------------------------------------------------------------------ */
/* BatchFields: what a send touches of a batch (the accumulator's Batch's base)               */

typedef struct {
    PyObject_HEAD
    PyObject *records; /* list of (index, timestamp, key, value, headers) */
    Py_ssize_t size_bytes;
    PyObject *outcome;
} BatchFieldsObject;

/* Arguments are the subclass's __init__'s. */
static PyObject *BatchFields_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    BatchFieldsObject *self = (BatchFieldsObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->records = PyList_New(0);
    if (self->records == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->outcome = Py_NewRef(Py_None);
    return (PyObject *)self;
}

static int BatchFields_traverse(BatchFieldsObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->records);
    Py_VISIT(self->outcome);
    return 0;
}

static int BatchFields_clear(BatchFieldsObject *self) {
    Py_CLEAR(self->records);
    Py_CLEAR(self->outcome);
    return 0;
}

static void BatchFields_dealloc(BatchFieldsObject *self) {
    PyObject_GC_UnTrack(self);
    BatchFields_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *BatchFields_get_records(BatchFieldsObject *self, void *closure) {
    return Py_NewRef(self->records);
}

static PyObject *BatchFields_get_outcome(BatchFieldsObject *self, void *closure) {
    return Py_NewRef(self->outcome);
}

static int BatchFields_set_outcome(BatchFieldsObject *self, PyObject *value, void *closure) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "outcome cannot be deleted");
        return -1;
    }
    Py_SETREF(self->outcome, Py_NewRef(value));
    return 0;
}

static PyGetSetDef BatchFields_getset[] = {
    {"records", (getter)BatchFields_get_records, NULL, "(index, timestamp, key, value, headers) tuples", NULL},
    {"outcome", (getter)BatchFields_get_outcome, (setter)BatchFields_set_outcome, "the records' shared outcome",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef BatchFields_members[] = {
    {"size_bytes", T_PYSSIZET, offsetof(BatchFieldsObject, size_bytes), 0, "the records' bytes in the buffer"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject BatchFieldsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lanes.client._open_batches_c.BatchFields",
    .tp_basicsize = sizeof(BatchFieldsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What a send touches of a batch: records (a list), size_bytes, outcome.",
    .tp_new = BatchFields_new,
    .tp_dealloc = (destructor)BatchFields_dealloc,
    .tp_traverse = (traverseproc)BatchFields_traverse,
    .tp_clear = (inquiry)BatchFields_clear,
    .tp_getset = BatchFields_getset,
    .tp_members = BatchFields_members,
};

/* ------------------------------------------------------------------------------------------ */
/* OpenBatches                                                                                */

#define APPEND_MANY_RECORDS 500
#define RECORD_OVERHEAD_BYTES 20

static PyObject *str_choose_partition, *str_new_batch, *str_batch_full;

typedef struct {
    PyObject_HEAD
    LockObject *lock;
    PyObject *open; /* dict: (topic, partition) -> batch */
    PyObject *hooks;
    PyObject *future_type;
    PyObject *partition_counts; /* dict: topic -> partition count (the producer's metadata) */
    PyObject *now_ms;           /* callable, or None: the system's clock, read here */
    Py_ssize_t batch_size;
    Py_ssize_t buffer_limit;
    Py_ssize_t buffered;
    int keys_by_hash;
    int closed;
} OpenBatchesObject;

/* Where one record went: its future's fields but the topic and timestamp (the call's). */
typedef struct {
    PyObject *outcome; /* strong */
    Py_ssize_t partition;
    Py_ssize_t index;
} Placed;

static PyObject *closed_error(void) {
    PyObject *errors = PyImport_ImportModule("lanes.errors");
    if (errors == NULL) {
        return NULL;
    }
    PyObject *error = NULL;
    PyObject *codes = PyObject_GetAttrString(errors, "ErrorCode");
    PyObject *lanes_error = PyObject_GetAttrString(errors, "LanesError");
    PyObject *code = codes ? PyObject_GetAttrString(codes, "INVALID_REQUEST") : NULL;
    if (code != NULL && lanes_error != NULL) {
        error = PyObject_CallFunction(lanes_error, "sO", "the producer is closed", code);
        if (error != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(error), error);
            Py_CLEAR(error);
        }
    }
    Py_XDECREF(code);
    Py_XDECREF(lanes_error);
    Py_XDECREF(codes);
    Py_DECREF(errors);
    return NULL;
}

/* The record's partition: by its key's hash, or the hooks' choice. -1 with an error set. */
static Py_ssize_t choose(OpenBatchesObject *self, PyObject *topic, PyObject *key, PyObject *partition,
                         Py_ssize_t num_partitions) {
    if (key != Py_None && partition == Py_None && self->keys_by_hash && num_partitions > 0) {
        Py_buffer view;
        if (PyObject_GetBuffer(key, &view, PyBUF_SIMPLE) < 0) {
            return -1;
        }
        uint32_t h = murmur3_32(view.buf, view.len, 0);
        PyBuffer_Release(&view);
        return (Py_ssize_t)((h & 0x7fffffffu) % (uint32_t)num_partitions);
    }
    PyObject *count = PyLong_FromSsize_t(num_partitions);
    if (count == NULL) {
        return -1;
    }
    PyObject *chosen = PyObject_CallMethodObjArgs(self->hooks, str_choose_partition, topic, key, count, partition, NULL);
    Py_DECREF(count);
    if (chosen == NULL) {
        return -1;
    }
    Py_ssize_t result = PyLong_AsSsize_t(chosen);
    Py_DECREF(chosen);
    if (result < 0 && !PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "choose_partition answered %zd", result);
    }
    return result < 0 ? -1 : result;
}

/* _add_locked of the reference: 1 placed (*placed filled), 0 no room, -1 error. Lock held. */
static int add_locked(OpenBatchesObject *self, PyObject *topic, PyObject *value, PyObject *key, PyObject *partition,
                      PyObject *headers, PyObject *timestamp, Py_ssize_t size, Py_ssize_t num_partitions,
                      Placed *placed) {
    if (!(self->buffered + size <= self->buffer_limit || self->buffered == 0)) {
        return 0;
    }
    Py_ssize_t chosen = choose(self, topic, key, partition, num_partitions);
    if (chosen < 0) {
        return -1;
    }
    PyObject *chosen_object = PyLong_FromSsize_t(chosen);
    if (chosen_object == NULL) {
        return -1;
    }
    int status = -1;
    PyObject *batch = NULL, *records = NULL, *record = NULL, *index_object = NULL;
    PyObject *open_key = PyTuple_Pack(2, topic, chosen_object);
    if (open_key == NULL) {
        goto done;
    }
    batch = PyDict_GetItemWithError(self->open, open_key);
    if (batch != NULL) {
        Py_INCREF(batch);
    } else {
        if (PyErr_Occurred()) {
            goto done;
        }
        batch = PyObject_CallMethodObjArgs(self->hooks, str_new_batch, topic, chosen_object, NULL);
        if (batch == NULL) {
            goto done;
        }
        if (!PyObject_TypeCheck(batch, &BatchFieldsType)) {
            PyErr_SetString(PyExc_TypeError, "new_batch must return a BatchFields");
            goto done;
        }
        if (PyDict_SetItem(self->open, open_key, batch) < 0) {
            goto done;
        }
    }
    BatchFieldsObject *fields = (BatchFieldsObject *)batch;
    records = Py_NewRef(fields->records);
    Py_ssize_t index = PyList_GET_SIZE(records);
    index_object = PyLong_FromSsize_t(index);
    if (index_object == NULL) {
        goto done;
    }
    record = PyTuple_Pack(5, index_object, timestamp, key, value, headers);
    if (record == NULL) {
        goto done;
    }
    /* Immutable and holding no container but the immutable headers: it can be in no cycle, so
     * the collector need not walk the records a buffer holds (CPython would untrack it itself
     * at its first collection). */
    PyObject_GC_UnTrack(record);
    if (PyList_Append(records, record) < 0) {
        goto done;
    }
    self->buffered += size;
    fields->size_bytes += size;
    /* From here the record is in: what fails now fails with the record in the batch, as the
     * reference does. */
    if (fields->size_bytes >= self->batch_size) {
        PyObject *result = PyObject_CallMethodObjArgs(self->hooks, str_batch_full, batch, NULL);
        if (result == NULL) {
            goto done;
        }
        Py_DECREF(result);
    }
    placed->outcome = Py_NewRef(fields->outcome);
    placed->partition = chosen;
    placed->index = index;
    status = 1;
done:
    Py_XDECREF(record);
    Py_XDECREF(index_object);
    Py_XDECREF(records);
    Py_XDECREF(batch);
    Py_XDECREF(open_key);
    Py_DECREF(chosen_object);
    return status;
}

/* future_type(outcome, topic, partition, index, timestamp); steals placed->outcome. A subtype of
 * FutureFields (RecordFuture) is filled here, without a call. */
static PyObject *future_of(OpenBatchesObject *self, Placed *placed, PyObject *topic, PyObject *timestamp) {
    PyObject *partition = PyLong_FromSsize_t(placed->partition);
    PyObject *index = PyLong_FromSsize_t(placed->index);
    PyObject *future = NULL;
    PyTypeObject *type = (PyTypeObject *)self->future_type;
    if (partition == NULL || index == NULL) {
        /* the error is set */
    } else if (PyType_Check(type) && PyType_IsSubtype(type, &FutureFieldsType) &&
               type->tp_init == FutureFieldsType.tp_init && type->tp_new == FutureFieldsType.tp_new) {
        FutureFieldsObject *fields = (FutureFieldsObject *)type->tp_alloc(type, 0);
        if (fields != NULL) {
            fields->outcome = Py_NewRef(placed->outcome);
            fields->topic = Py_NewRef(topic);
            fields->partition = Py_NewRef(partition);
            fields->index = Py_NewRef(index);
            fields->timestamp = Py_NewRef(timestamp);
        }
        future = (PyObject *)fields;
    } else {
        PyObject *args[5] = {placed->outcome, topic, partition, index, timestamp};
        future = PyObject_Vectorcall(self->future_type, args, 5, NULL);
    }
    Py_XDECREF(index);
    Py_XDECREF(partition);
    Py_CLEAR(placed->outcome);
    return future;
}

/* One record under the lock: its future; None when the buffer has no room (or, with
 * closed_is_none, the producer is closed: the caller's long way raises); NULL with an error. */
static PyObject *append_one(OpenBatchesObject *self, PyObject *topic, PyObject *value, PyObject *key,
                            PyObject *partition, PyObject *headers, PyObject *timestamp, Py_ssize_t size,
                            Py_ssize_t num_partitions, int closed_is_none) {
    if (lock_take(self->lock, -1) < 0) {
        return NULL;
    }
    if (self->closed && !closed_is_none) {
        lock_drop(self->lock);
        return closed_error();
    }
    Placed placed = {NULL, 0, 0};
    int status = self->closed ? 0 : add_locked(self, topic, value, key, partition, headers, timestamp, size,
                                                num_partitions, &placed);
    lock_drop(self->lock);
    return status < 0 ? NULL : status == 0 ? Py_NewRef(Py_None) : future_of(self, &placed, topic, timestamp);
}

static PyObject *OpenBatches_send_at_once(OpenBatchesObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "send_at_once takes 6 positional arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *topic = args[0], *value = args[1], *key = args[2], *partition = args[3];
    if (args[4] != Py_None || args[5] != Py_None || !PyBytes_CheckExact(value) ||
        (key != Py_None && !PyBytes_CheckExact(key))) {
        Py_RETURN_NONE;
    }
    PyObject *count_object = PyDict_GetItemWithError(self->partition_counts, topic);
    if (count_object == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    Py_ssize_t num_partitions = PyLong_AsSsize_t(count_object);
    if (num_partitions == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(value) + (key == Py_None ? 0 : PyBytes_GET_SIZE(key)) + RECORD_OVERHEAD_BYTES;
    PyObject *timestamp;
    if (self->now_ms == Py_None) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        timestamp = PyLong_FromLongLong((long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
    } else {
        timestamp = PyObject_CallNoArgs(self->now_ms);
    }
    if (timestamp == NULL) {
        return NULL;
    }
    PyObject *headers = PyTuple_New(0);
    PyObject *future = headers == NULL ? NULL
                                       : append_one(self, topic, value, key, partition, headers, timestamp, size,
                                                    num_partitions, 1);
    Py_XDECREF(headers);
    Py_DECREF(timestamp);
    return future;
}

static PyObject *OpenBatches_append(OpenBatchesObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "append takes 8 positional arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *topic = args[0], *value = args[1], *key = args[2], *partition = args[3], *headers = args[4],
             *timestamp = args[5];
    Py_ssize_t size = PyLong_AsSsize_t(args[6]);
    Py_ssize_t num_partitions = PyLong_AsSsize_t(args[7]);
    if ((size == -1 || num_partitions == -1) && PyErr_Occurred()) {
        return NULL;
    }
    return append_one(self, topic, value, key, partition, headers, timestamp, size, num_partitions, 0);
}

static int check_blob(PyObject *blob, Py_ssize_t position) {
    if (blob != Py_None && !PyBytes_CheckExact(blob)) {
        PyErr_Format(PyExc_TypeError, "record %zd: values and keys are bytes or None; encode them first", position);
        return -1;
    }
    return 0;
}

static PyObject *OpenBatches_append_many(OpenBatchesObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "append_many takes 7 positional arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *topic = args[0], *values = args[1], *keys = args[2], *partition = args[3], *timestamp = args[4];
    Py_ssize_t num_partitions = PyLong_AsSsize_t(args[5]);
    Py_ssize_t start = PyLong_AsSsize_t(args[6]);
    if ((num_partitions == -1 || start == -1) && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t total = PyObject_Size(values);
    if (total < 0) {
        return NULL;
    }
    Py_ssize_t stop = total < start + APPEND_MANY_RECORDS ? total : start + APPEND_MANY_RECORDS;
    Placed placed[APPEND_MANY_RECORDS];
    Py_ssize_t count = 0;
    int failed = 0;
    PyObject *headers = PyTuple_New(0);
    if (headers == NULL) {
        return NULL;
    }
    if (lock_take(self->lock, -1) < 0) {
        Py_DECREF(headers);
        return NULL;
    }
    if (self->closed) {
        lock_drop(self->lock);
        Py_DECREF(headers);
        return closed_error();
    }
    for (Py_ssize_t position = start; position < stop; position++) {
        PyObject *value = PySequence_GetItem(values, position);
        PyObject *key = value == NULL ? NULL : keys == Py_None ? Py_NewRef(Py_None) : PySequence_GetItem(keys, position);
        int status = -1;
        if (key != NULL && check_blob(value, position) == 0 && check_blob(key, position) == 0) {
            Py_ssize_t size = (value == Py_None ? 0 : PyBytes_GET_SIZE(value)) +
                              (key == Py_None ? 0 : PyBytes_GET_SIZE(key)) + RECORD_OVERHEAD_BYTES;
            status = add_locked(self, topic, value, key, partition, headers, timestamp, size, num_partitions,
                                &placed[count]);
        }
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (status < 0) {
            failed = 1;
        }
        if (status <= 0) {
            break;
        }
        count++;
    }
    lock_drop(self->lock);
    Py_DECREF(headers);
    /* on an error the records before it are in, and the error propagates (their futures are
     * not made: the reference's list is dropped with its exception) */
    if (failed) {
        for (Py_ssize_t i = 0; i < count; i++) {
            Py_CLEAR(placed[i].outcome);
        }
        return NULL;
    }
    PyObject *futures = PyList_New(count);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *future = futures == NULL ? NULL : future_of(self, &placed[i], topic, timestamp);
        if (future == NULL) {
            Py_CLEAR(placed[i].outcome);
            Py_CLEAR(futures);
            continue;
        }
        PyList_SET_ITEM(futures, i, future);
    }
    return futures;
}

static PyObject *OpenBatches_has_room(OpenBatchesObject *self, PyObject *arg) {
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return PyBool_FromLong(self->buffered + size <= self->buffer_limit || self->buffered == 0);
}

static PyObject *OpenBatches_release(OpenBatchesObject *self, PyObject *arg) {
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred()) {
        return NULL;
    }
    self->buffered -= size;
    Py_RETURN_NONE;
}

static PyObject *OpenBatches_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Py_ssize_t batch_size, buffer_limit;
    int keys_by_hash;
    PyObject *hooks, *future_type, *partition_counts, *now_ms;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "OpenBatches() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "nnpOOO!O:OpenBatches", &batch_size, &buffer_limit, &keys_by_hash, &hooks,
                          &future_type, &PyDict_Type, &partition_counts, &now_ms)) {
        return NULL;
    }
    if (now_ms != Py_None && !PyCallable_Check(now_ms)) {
        PyErr_SetString(PyExc_TypeError, "now_ms must be callable or None");
        return NULL;
    }
    OpenBatchesObject *self = (OpenBatchesObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->lock = (LockObject *)PyObject_CallNoArgs((PyObject *)&LockType);
    self->open = PyDict_New();
    if (self->lock == NULL || self->open == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->hooks = Py_NewRef(hooks);
    self->future_type = Py_NewRef(future_type);
    self->partition_counts = Py_NewRef(partition_counts);
    self->now_ms = Py_NewRef(now_ms);
    self->batch_size = batch_size;
    self->buffer_limit = buffer_limit;
    self->keys_by_hash = keys_by_hash;
    return (PyObject *)self;
}

static int OpenBatches_traverse(OpenBatchesObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->lock);
    Py_VISIT(self->open);
    Py_VISIT(self->hooks);
    Py_VISIT(self->future_type);
    Py_VISIT(self->partition_counts);
    Py_VISIT(self->now_ms);
    return 0;
}

static int OpenBatches_clear(OpenBatchesObject *self) {
    Py_CLEAR(self->lock);
    Py_CLEAR(self->open);
    Py_CLEAR(self->hooks);
    Py_CLEAR(self->future_type);
    Py_CLEAR(self->partition_counts);
    Py_CLEAR(self->now_ms);
    return 0;
}

static void OpenBatches_dealloc(OpenBatchesObject *self) {
    PyObject_GC_UnTrack(self);
    OpenBatches_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *OpenBatches_get_buffered(OpenBatchesObject *self, void *closure) {
    return PyLong_FromSsize_t(self->buffered);
}

static PyObject *OpenBatches_get_closed(OpenBatchesObject *self, void *closure) {
    return PyBool_FromLong(self->closed);
}

static int OpenBatches_set_closed(OpenBatchesObject *self, PyObject *value, void *closure) {
    int truth = value == NULL ? -1 : PyObject_IsTrue(value);
    if (truth < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_AttributeError, "closed cannot be deleted");
        }
        return -1;
    }
    self->closed = truth;
    return 0;
}

static PyObject *OpenBatches_get_lock(OpenBatchesObject *self, void *closure) {
    return Py_NewRef((PyObject *)self->lock);
}

static PyObject *OpenBatches_get_open(OpenBatchesObject *self, void *closure) { return Py_NewRef(self->open); }

static PyObject *OpenBatches_get_batch_size(OpenBatchesObject *self, void *closure) {
    return PyLong_FromSsize_t(self->batch_size);
}

static PyObject *OpenBatches_get_buffer_limit(OpenBatchesObject *self, void *closure) {
    return PyLong_FromSsize_t(self->buffer_limit);
}

static PyGetSetDef OpenBatches_getset[] = {
    {"buffered", (getter)OpenBatches_get_buffered, NULL, "bytes of records appended and not yet released", NULL},
    {"closed", (getter)OpenBatches_get_closed, (setter)OpenBatches_set_closed, "whether appends are refused", NULL},
    {"lock", (getter)OpenBatches_get_lock, NULL, "the lock guarding this state and the accumulator's queues", NULL},
    {"open", (getter)OpenBatches_get_open, NULL, "(topic, partition) -> the partition's open batch", NULL},
    {"batch_size", (getter)OpenBatches_get_batch_size, NULL, "bytes at which a batch is full", NULL},
    {"buffer_limit", (getter)OpenBatches_get_buffer_limit, NULL, "bytes the buffer holds at most", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef OpenBatches_methods[] = {
    {"send_at_once", (PyCFunction)(void (*)(void))OpenBatches_send_at_once, METH_FASTCALL,
     "send_at_once(topic, value, key, partition, headers, timestamp) -> future | None (the long way)"},
    {"append", (PyCFunction)(void (*)(void))OpenBatches_append, METH_FASTCALL,
     "append(topic, value, key, partition, headers, timestamp, size_bytes, num_partitions) -> future | None"},
    {"append_many", (PyCFunction)(void (*)(void))OpenBatches_append_many, METH_FASTCALL,
     "append_many(topic, values, keys, partition, timestamp, num_partitions, start) -> list of futures"},
    {"has_room", (PyCFunction)OpenBatches_has_room, METH_O, "has_room(size) -> bool (lock held)"},
    {"release", (PyCFunction)OpenBatches_release, METH_O, "release(size) (lock held)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject OpenBatchesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lanes.client._open_batches_c.OpenBatches",
    .tp_basicsize = sizeof(OpenBatchesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "OpenBatches(batch_size, buffer_limit, keys_by_hash, hooks, future_type, partition_counts, now_ms): see "
               "_open_batches_py.",
    .tp_new = OpenBatches_new,
    .tp_dealloc = (destructor)OpenBatches_dealloc,
    .tp_traverse = (traverseproc)OpenBatches_traverse,
    .tp_clear = (inquiry)OpenBatches_clear,
    .tp_methods = OpenBatches_methods,
    .tp_getset = OpenBatches_getset,
};

/* ------------------------------------------------------------------------------------------ */
/* module                                                                                     */

static PyMethodDef module_methods[] = {
    {"murmur3_32", murmur3_32_py, METH_O, "murmur3_32(data) -> MurmurHash3_x86_32 of data, seed 0, unsigned"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "lanes.client._open_batches_c",
    "C implementation of the producer's open batches (see _open_batches_py for the contract).", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__open_batches_c(void) {
    if (PyType_Ready(&LockType) < 0 || PyType_Ready(&FutureFieldsType) < 0 || PyType_Ready(&BatchFieldsType) < 0 || PyType_Ready(&OpenBatchesType) < 0) {
        return NULL;
    }
    str_choose_partition = PyUnicode_InternFromString("choose_partition");
    str_new_batch = PyUnicode_InternFromString("new_batch");
    str_batch_full = PyUnicode_InternFromString("batch_full");
    if (!str_choose_partition || !str_new_batch || !str_batch_full) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Lock", (PyObject *)&LockType) < 0 ||
        PyModule_AddObjectRef(m, "FutureFields", (PyObject *)&FutureFieldsType) < 0 ||
        PyModule_AddObjectRef(m, "BatchFields", (PyObject *)&BatchFieldsType) < 0 ||
        PyModule_AddObjectRef(m, "OpenBatches", (PyObject *)&OpenBatchesType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
