/*
 * Fast path of the RecordBatch v2 records-section codec (lanes.protocol._records_c).
 *
 * Same contract as the pure-Python reference, lanes/protocol/_records_py.py, which documents
 * it; the test suite checks the two against each other. The section layout is written at the
 * top of lanes/protocol/records.py. Only the records section lives here: batch headers, CRC
 * and compression stay in Python, where they cost once per batch.
 *
 * Every read is bounds-checked against the record's declared length and the section's end;
 * errors are ValueError("record I at byte P of the records section: WHAT").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define INT32_LIMIT_MAX 2147483647LL
#define MIN_RECORD_BYTES 7

/* ------------------------------------------------------------------------------------------ */
/* varints: zigzag + LEB128, as Kafka's ByteUtils.writeVarint / writeVarlong                   */

static inline uint64_t zigzag(int64_t value) {
    return ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
}

static inline int64_t unzigzag(uint64_t value) {
    return (int64_t)(value >> 1) ^ -(int64_t)(value & 1);
}

static inline Py_ssize_t varint_size(int64_t value) {
    uint64_t u = zigzag(value);
    Py_ssize_t size = 1;
    while (u >= 0x80) {
        u >>= 7;
        size++;
    }
    return size;
}

static inline char *varint_write(char *out, int64_t value) {
    uint64_t u = zigzag(value);
    while (u >= 0x80) {
        *out++ = (char)((u & 0x7f) | 0x80);
        u >>= 7;
    }
    *out++ = (char)u;
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* encode                                                                                     */

typedef struct {
    char *data;
    Py_ssize_t length;
    Py_ssize_t capacity;
} Output;

static int output_reserve(Output *out, Py_ssize_t extra) {
    if (out->length + extra <= out->capacity) {
        return 0;
    }
    Py_ssize_t capacity = out->capacity ? out->capacity : 256;
    while (capacity < out->length + extra) {
        if (capacity > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        capacity *= 2;
    }
    char *grown = PyMem_Realloc(out->data, (size_t)capacity);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->data = grown;
    out->capacity = capacity;
    return 0;
}

/* A key, value or header value: None, bytes, bytearray or memoryview. Other buffer exporters are
 * refused (as by the reference): their exports could run Python code and change length between
 * the sizing pass and the writing pass, which must see identical lengths. */
typedef struct {
    int is_null;
    Py_buffer view;
} Blob;

static int blob_get(PyObject *object, Blob *blob, Py_ssize_t index, const char *what) {
    if (object == Py_None) {
        blob->is_null = 1;
        blob->view.buf = NULL;
        blob->view.len = 0;
        blob->view.obj = NULL;
        return 0;
    }
    blob->is_null = 0;
    int accepted = PyBytes_Check(object) || PyByteArray_Check(object) || PyMemoryView_Check(object);
    if (!accepted || PyObject_GetBuffer(object, &blob->view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "record %zd %s must be bytes or None, not %.100s", index, what,
                     Py_TYPE(object)->tp_name);
        return -1;
    }
    return 0;
}

static void blob_release(Blob *blob) {
    if (!blob->is_null && blob->view.obj != NULL) {
        PyBuffer_Release(&blob->view);
    }
}

static inline Py_ssize_t blob_encoded_size(const Blob *blob) {
    return blob->is_null ? 1 : varint_size(blob->view.len) + blob->view.len;
}

static inline char *blob_write(char *out, const Blob *blob) {
    if (blob->is_null) {
        return varint_write(out, -1);
    }
    out = varint_write(out, blob->view.len);
    memcpy(out, blob->view.buf, (size_t)blob->view.len);
    return out + blob->view.len;
}

static int int64_field(PyObject *object, Py_ssize_t index, const char *what, int64_t *out) {
    if (!PyLong_Check(object)) {
        PyErr_Format(PyExc_TypeError, "record %zd %s must be an int, not %.100s", index, what,
                     Py_TYPE(object)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "record %zd %s does not fit in 64 bits", index, what);
        return -1;
    }
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (int64_t)value;
    return 0;
}

/* Size of the headers of one record, or -1 with an exception set. */
static Py_ssize_t headers_size(PyObject *headers, Py_ssize_t index) {
    Py_ssize_t count = PySequence_Fast_GET_SIZE(headers);
    Py_ssize_t size = varint_size(count);
    for (Py_ssize_t h = 0; h < count; h++) {
        PyObject *header = PySequence_Fast_GET_ITEM(headers, h);
        if (!PyTuple_Check(header) || PyTuple_GET_SIZE(header) != 2 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(header, 0))) {
            PyErr_Format(PyExc_TypeError,
                         "record %zd headers must be a sequence of (str, bytes | None) pairs", index);
            return -1;
        }
        Py_ssize_t key_length = 0;
        if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(header, 0), &key_length) == NULL) {
            return -1;
        }
        Blob value;
        if (blob_get(PyTuple_GET_ITEM(header, 1), &value, index, "header value") < 0) {
            return -1;
        }
        size += varint_size(key_length) + key_length + blob_encoded_size(&value);
        blob_release(&value);
    }
    return size;
}

static char *headers_write(char *out, PyObject *headers, Py_ssize_t index) {
    Py_ssize_t count = PySequence_Fast_GET_SIZE(headers);
    out = varint_write(out, count);
    for (Py_ssize_t h = 0; h < count; h++) {
        PyObject *header = PySequence_Fast_GET_ITEM(headers, h);
        Py_ssize_t key_length = 0;
        const char *key = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(header, 0), &key_length);
        if (key == NULL) {
            return NULL;
        }
        out = varint_write(out, key_length);
        memcpy(out, key, (size_t)key_length);
        out += key_length;
        Blob value;
        if (blob_get(PyTuple_GET_ITEM(header, 1), &value, index, "header value") < 0) {
            return NULL;
        }
        out = blob_write(out, &value);
        blob_release(&value);
    }
    return out;
}

static PyObject *encode_records(PyObject *module, PyObject *args) {
    PyObject *records_arg;
    long long base_offset, base_timestamp;
    if (!PyArg_ParseTuple(args, "OLL:encode_records", &records_arg, &base_offset, &base_timestamp)) {
        return NULL;
    }
    PyObject *records = PySequence_Fast(records_arg, "records must be a sequence of Record");
    if (records == NULL) {
        return NULL;
    }
    Output out = {NULL, 0, 0};
    int64_t max_timestamp = -1;
    int64_t previous_delta = -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(records);
    if (output_reserve(&out, count * 32 + 64) < 0) {
        goto error;
    }
    for (Py_ssize_t index = 0; index < count; index++) {
        PyObject *record = PySequence_Fast_GET_ITEM(records, index);
        if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) < 5) {
            PyErr_Format(PyExc_TypeError,
                         "record %zd must be a Record (offset, timestamp, key, value, headers)", index);
            goto error;
        }
        int64_t offset, timestamp;
        if (int64_field(PyTuple_GET_ITEM(record, 0), index, "offset", &offset) < 0 ||
            int64_field(PyTuple_GET_ITEM(record, 1), index, "timestamp", &timestamp) < 0) {
            goto error;
        }
        /* Differences are computed in 128 bits' worth of care: reject what would overflow. */
        if ((base_offset < 0 && offset > INT64_MAX + base_offset) ||
            (base_offset > 0 && offset < INT64_MIN + base_offset)) {
            PyErr_Format(PyExc_ValueError, "record %zd offset %lld is too far from the base offset", index,
                         (long long)offset);
            goto error;
        }
        int64_t offset_delta = offset - (int64_t)base_offset;
        if (offset_delta < 0) {
            PyErr_Format(PyExc_ValueError, "record %zd offset %lld is below the base offset %lld", index,
                         (long long)offset, base_offset);
            goto error;
        }
        if (offset_delta <= previous_delta) {
            PyErr_Format(PyExc_ValueError, "record %zd offset %lld is not after the previous record's", index,
                         (long long)offset);
            goto error;
        }
        if (offset_delta > INT32_LIMIT_MAX) {
            PyErr_Format(PyExc_ValueError,
                         "record %zd offset %lld is more than 2^31-1 after the base offset", index,
                         (long long)offset);
            goto error;
        }
        if ((base_timestamp < 0 && timestamp > INT64_MAX + base_timestamp) ||
            (base_timestamp > 0 && timestamp < INT64_MIN + base_timestamp)) {
            PyErr_Format(PyExc_ValueError,
                         "record %zd timestamp %lld is too far from the base timestamp", index,
                         (long long)timestamp);
            goto error;
        }
        int64_t timestamp_delta = timestamp - (int64_t)base_timestamp;
        previous_delta = offset_delta;
        if (timestamp > max_timestamp) {
            max_timestamp = timestamp;
        }

        Blob key, value;
        if (blob_get(PyTuple_GET_ITEM(record, 2), &key, index, "key") < 0) {
            goto error;
        }
        if (blob_get(PyTuple_GET_ITEM(record, 3), &value, index, "value") < 0) {
            blob_release(&key);
            goto error;
        }
        PyObject *headers = PySequence_Fast(PyTuple_GET_ITEM(record, 4), "");
        if (headers == NULL) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "record %zd headers must be a sequence of (str, bytes | None) pairs", index);
            blob_release(&key);
            blob_release(&value);
            goto error;
        }
        Py_ssize_t header_bytes = headers_size(headers, index);
        Py_ssize_t body = -1;
        if (header_bytes >= 0) {
            body = 1 + varint_size(timestamp_delta) + varint_size(offset_delta) + blob_encoded_size(&key) +
                   blob_encoded_size(&value) + header_bytes;
        }
        if (body > INT32_LIMIT_MAX) {
            PyErr_Format(PyExc_ValueError, "record %zd is larger than 2 GiB", index);
            body = -1;
        }
        if (body < 0 || output_reserve(&out, varint_size(body) + body) < 0) {
            Py_DECREF(headers);
            blob_release(&key);
            blob_release(&value);
            goto error;
        }
        char *cursor = out.data + out.length;
        cursor = varint_write(cursor, body);
        *cursor++ = 0; /* record attributes: unused in v2 */
        cursor = varint_write(cursor, timestamp_delta);
        cursor = varint_write(cursor, offset_delta);
        cursor = blob_write(cursor, &key);
        cursor = blob_write(cursor, &value);
        blob_release(&key);
        blob_release(&value);
        cursor = headers_write(cursor, headers, index);
        Py_DECREF(headers);
        if (cursor == NULL) {
            goto error;
        }
        out.length = cursor - out.data;
    }
    Py_DECREF(records);
    PyObject *section = PyBytes_FromStringAndSize(out.data, out.length);
    PyMem_Free(out.data);
    if (section == NULL) {
        return NULL;
    }
    return Py_BuildValue("(NLL)", section, (long long)max_timestamp, (long long)previous_delta);

error:
    Py_DECREF(records);
    PyMem_Free(out.data);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* decode                                                                                     */

typedef struct {
    const unsigned char *data;
    Py_ssize_t position;
    Py_ssize_t end;   /* end of the current record */
    Py_ssize_t total; /* end of the section */
    Py_ssize_t index;
    Py_ssize_t record_start;
} Reader;

static int reader_fail(const Reader *reader, const char *message) {
    PyErr_Format(PyExc_ValueError, "record %zd at byte %zd of the records section: %s", reader->index,
                 reader->record_start, message);
    return -1;
}

/* A zigzag varint of at most max_bytes; errors name it "<what><detail>" (the two parts are joined
   only when an error is raised: a record's key and value lengths are read millions of times). */
static int read_varint_of(Reader *reader, const char *what, const char *detail, int max_bytes, int64_t *out) {
    uint64_t result = 0;
    int shift = 0;
    char message[160];
    for (int i = 0; i < max_bytes; i++) {
        if (reader->position >= reader->end) {
            snprintf(message, sizeof message, "%s%s varint is truncated", what, detail);
            return reader_fail(reader, message);
        }
        unsigned char byte = reader->data[reader->position++];
        if (i == 9 && (byte & 0x7e)) {
            snprintf(message, sizeof message, "%s%s varint does not fit in 64 bits", what, detail);
            return reader_fail(reader, message);
        }
        result |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            if (max_bytes == 5 && result > 0xffffffffULL) {
                snprintf(message, sizeof message, "%s%s varint does not fit in 32 bits", what, detail);
                return reader_fail(reader, message);
            }
            *out = unzigzag(result);
            return 0;
        }
        shift += 7;
    }
    snprintf(message, sizeof message, "%s%s varint is longer than %d bytes", what, detail, max_bytes);
    return reader_fail(reader, message);
}

static int read_varint(Reader *reader, const char *what, int max_bytes, int64_t *out) {
    return read_varint_of(reader, what, "", max_bytes, out);
}

/* A nullable byte field: *out is a new reference (bytes or None); with out NULL the field is only
   checked and skipped, and *is_null (when given) says whether it was null. */
static int read_blob(Reader *reader, const char *what, int nullable, PyObject **out, int *is_null) {
    char message[200];
    int64_t length;
    if (read_varint_of(reader, what, " length", 5, &length) < 0) {
        return -1;
    }
    if (is_null != NULL) {
        *is_null = length == -1;
    }
    if (length == -1 && nullable) {
        if (out != NULL) {
            Py_INCREF(Py_None);
            *out = Py_None;
        }
        return 0;
    }
    if (length < 0) {
        snprintf(message, sizeof message, "%s length %lld is negative", what, (long long)length);
        return reader_fail(reader, message);
    }
    if (reader->position + length > reader->end) {
        snprintf(message, sizeof message, "%s of %lld bytes overruns the record", what, (long long)length);
        return reader_fail(reader, message);
    }
    if (out == NULL) {
        reader->position += (Py_ssize_t)length;
        return 0;
    }
    *out = PyBytes_FromStringAndSize((const char *)reader->data + reader->position, (Py_ssize_t)length);
    reader->position += (Py_ssize_t)length;
    return *out == NULL ? -1 : 0;
}

/* The headers as a tuple of (key, value) pairs; with build 0 they are only checked (header keys
   must be UTF-8 either way: a consumer decodes them) and Py_None is returned, borrowed. */
static PyObject *read_headers(Reader *reader, int build) {
    int64_t count;
    if (read_varint(reader, "header count", 5, &count) < 0) {
        return NULL;
    }
    if (count < 0) {
        char message[80];
        snprintf(message, sizeof message, "header count %lld is negative", (long long)count);
        reader_fail(reader, message);
        return NULL;
    }
    if (count > (reader->end - reader->position) / 2 + 1) {
        reader_fail(reader, "header count exceeds what the record can hold");
        return NULL;
    }
    PyObject *headers = build ? PyTuple_New((Py_ssize_t)count) : Py_None;
    if (headers == NULL) {
        return NULL;
    }
    for (Py_ssize_t h = 0; h < (Py_ssize_t)count; h++) {
        PyObject *raw_key = NULL, *value = NULL;
        if (read_blob(reader, "header key", 0, &raw_key, NULL) < 0) {
            if (build) {
                Py_DECREF(headers);
            }
            return NULL;
        }
        PyObject *key = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(raw_key), PyBytes_GET_SIZE(raw_key), "strict");
        Py_DECREF(raw_key);
        if (key == NULL) {
            PyErr_Clear();
            reader_fail(reader, "header key is not valid UTF-8");
            if (build) {
                Py_DECREF(headers);
            }
            return NULL;
        }
        if (!build) {
            Py_DECREF(key);
            if (read_blob(reader, "header value", 1, NULL, NULL) < 0) {
                return NULL;
            }
            continue;
        }
        if (read_blob(reader, "header value", 1, &value, NULL) < 0) {
            Py_DECREF(key);
            Py_DECREF(headers);
            return NULL;
        }
        PyObject *pair = PyTuple_Pack(2, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (pair == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SET_ITEM(headers, h, pair);
    }
    return headers;
}

/* Whether records of ``record_type`` with these trailer items are left out of the cyclic garbage
 * collector, which would otherwise walk every one of the hundreds of thousands a fetch brings at
 * each collection while they are alive (exact tuples it untracks by itself, a subclass's instances
 * never). A record is a tuple subclass without a __dict__ holding ints, bytes, None, a tuple of
 * (str, bytes) header pairs and the trailer's items: strings, bytes, None and ints, an int
 * subclass included (the timestamp type, an IntEnum member). Such a record can be part of a
 * reference cycle only through an attribute set on such an int subclass instance; the cost would
 * be a leak, never a crash. Any other trailer item keeps the records tracked. */
static int untrackable(PyObject *record_type, PyObject *trailer) {
    if (((PyTypeObject *)record_type)->tp_dictoffset != 0) {
        return 0;
    }
    Py_ssize_t size = trailer == NULL ? 0 : PyTuple_GET_SIZE(trailer);
    for (Py_ssize_t t = 0; t < size; t++) {
        PyObject *item = PyTuple_GET_ITEM(trailer, t);
        if (!(PyLong_Check(item) || PyUnicode_CheckExact(item) || PyBytes_CheckExact(item) || item == Py_None)) {
            return 0;
        }
    }
    return 1;
}

/* Read count records from the reader's section. With record_type, each becomes a record_type tuple
   (offset, timestamp, key, value, headers, *trailer) put in records; without (NULL), the records are
   only checked, as a producer must have written them: offset deltas 0, 1, 2, ... and, with
   require_keys, a key on every record. */
static int walk_records(Reader *reader, Py_ssize_t count, long long base_offset, long long base_timestamp,
                        PyObject *record_type, PyObject *trailer, int require_keys, PyObject *records) {
    int build = record_type != NULL;
    Py_ssize_t trailer_size = trailer == NULL ? 0 : PyTuple_GET_SIZE(trailer);
    int untrack = build && untrackable(record_type, trailer);
    for (Py_ssize_t index = 0; index < count; index++) {
        reader->index = index;
        reader->record_start = reader->position;
        reader->end = reader->total;
        char message[200];
        if (reader->position >= reader->total) {
            snprintf(message, sizeof message, "missing: the batch header counts %zd records, the section holds %zd",
                     count, index);
            return reader_fail(reader, message);
        }
        int64_t length, timestamp_delta, offset_delta;
        if (read_varint(reader, "length", 5, &length) < 0) {
            return -1;
        }
        if (length < 0 || reader->position + length > reader->total) {
            snprintf(message, sizeof message, "length %lld overruns the records section", (long long)length);
            return reader_fail(reader, message);
        }
        reader->end = reader->position + (Py_ssize_t)length;
        if (reader->position >= reader->end) {
            return reader_fail(reader, "attributes byte is missing");
        }
        reader->position += 1; /* record attributes: unused in v2 */
        if (read_varint(reader, "timestamp delta", 10, &timestamp_delta) < 0 ||
            read_varint(reader, "offset delta", 5, &offset_delta) < 0) {
            return -1;
        }
        if (offset_delta < 0) {
            snprintf(message, sizeof message, "offset delta %lld is negative", (long long)offset_delta);
            return reader_fail(reader, message);
        }
        if (!build && offset_delta != index) {
            snprintf(message, sizeof message, "offset delta %lld is not %zd: a producer's offsets are contiguous",
                     (long long)offset_delta, index);
            return reader_fail(reader, message);
        }
        long long offset;
        if (__builtin_add_overflow(base_offset, (long long)offset_delta, &offset)) {
            return reader_fail(reader, "offset delta overflows the base offset");
        }
        long long timestamp;
        if (__builtin_add_overflow(base_timestamp, (long long)timestamp_delta, &timestamp)) {
            return reader_fail(reader, "timestamp delta overflows the base timestamp");
        }
        PyObject *key = NULL, *value = NULL, *headers = NULL;
        int key_is_null = 0;
        if (read_blob(reader, "key", 1, build ? &key : NULL, &key_is_null) < 0) {
            return -1;
        }
        if (require_keys && key_is_null) {
            return reader_fail(reader, "has no key: a compacted topic (cleanup.policy=compact) needs one on every record");
        }
        if (read_blob(reader, "value", 1, build ? &value : NULL, NULL) < 0) {
            Py_XDECREF(key);
            return -1;
        }
        headers = read_headers(reader, build);
        if (headers == NULL) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            return -1;
        }
        if (reader->position != reader->end) {
            snprintf(message, sizeof message, "length says %lld bytes but the fields end %zd early",
                     (long long)length, reader->end - reader->position);
            if (build) {
                Py_DECREF(key);
                Py_DECREF(value);
                Py_DECREF(headers);
            }
            return reader_fail(reader, message);
        }
        if (!build) {
            continue;
        }
        /* The record_type instance (a tuple subclass) allocated and filled here, as
         * tuple.__new__(record_type, fields) would build it (type->tp_alloc, then the items),
         * without the intermediate fields and arguments tuples. */
        PyObject *record = ((PyTypeObject *)record_type)->tp_alloc((PyTypeObject *)record_type, 5 + trailer_size);
        if (record == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            return -1;
        }
        PyTuple_SET_ITEM(record, 0, PyLong_FromLongLong(offset));
        PyTuple_SET_ITEM(record, 1, PyLong_FromLongLong(timestamp));
        PyTuple_SET_ITEM(record, 2, key);
        PyTuple_SET_ITEM(record, 3, value);
        PyTuple_SET_ITEM(record, 4, headers);
        for (Py_ssize_t t = 0; t < trailer_size; t++) {
            PyObject *item = PyTuple_GET_ITEM(trailer, t);
            Py_INCREF(item);
            PyTuple_SET_ITEM(record, 5 + t, item);
        }
        if (PyTuple_GET_ITEM(record, 0) == NULL || PyTuple_GET_ITEM(record, 1) == NULL) {
            Py_DECREF(record);
            return -1;
        }
        if (untrack) {
            PyObject_GC_UnTrack(record);
        }
        PyList_SET_ITEM(records, index, record);
    }
    if (reader->position != reader->total) {
        char message[120];
        reader->index = count;
        reader->record_start = reader->position;
        snprintf(message, sizeof message, "%zd bytes follow the last of the %zd records",
                 reader->total - reader->position, count);
        return reader_fail(reader, message);
    }
    return 0;
}

static int count_fits(Py_ssize_t count, Py_ssize_t section_bytes) {
    if (count < 0 || count > section_bytes / MIN_RECORD_BYTES + 1) {
        PyErr_Format(PyExc_ValueError, "records count %zd does not fit a %zd-byte records section", count,
                     section_bytes);
        return 0;
    }
    return 1;
}

static PyObject *decode_records(PyObject *module, PyObject *args) {
    Py_buffer section;
    Py_ssize_t count;
    long long base_offset, base_timestamp;
    PyObject *record_type;
    PyObject *trailer = NULL;
    if (!PyArg_ParseTuple(args, "y*nLLO|O!:decode_records", &section, &count, &base_offset, &base_timestamp,
                          &record_type, &PyTuple_Type, &trailer)) {
        return NULL;
    }
    if (!PyType_Check(record_type) || !PyType_IsSubtype((PyTypeObject *)record_type, &PyTuple_Type)) {
        PyBuffer_Release(&section);
        PyErr_SetString(PyExc_TypeError, "record_type must be a tuple subclass");
        return NULL;
    }
    if (!count_fits(count, section.len)) {
        PyBuffer_Release(&section);
        return NULL;
    }
    PyObject *records = PyList_New(count);
    if (records == NULL) {
        PyBuffer_Release(&section);
        return NULL;
    }
    Reader reader = {section.buf, 0, section.len, section.len, 0, 0};
    int failed = walk_records(&reader, count, base_offset, base_timestamp, record_type, trailer, 0, records) < 0;
    PyBuffer_Release(&section);
    if (failed) {
        Py_DECREF(records);
        return NULL;
    }
    return records;
}

static PyObject *check_records(PyObject *module, PyObject *args) {
    Py_buffer section;
    Py_ssize_t count;
    long long base_timestamp;
    int require_keys;
    if (!PyArg_ParseTuple(args, "y*nLp:check_records", &section, &count, &base_timestamp, &require_keys)) {
        return NULL;
    }
    if (!count_fits(count, section.len)) {
        PyBuffer_Release(&section);
        return NULL;
    }
    Reader reader = {section.buf, 0, section.len, section.len, 0, 0};
    int failed = walk_records(&reader, count, 0, base_timestamp, NULL, NULL, require_keys, NULL) < 0;
    PyBuffer_Release(&section);
    if (failed) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"encode_records", encode_records, METH_VARARGS,
     "encode_records(records, base_offset, base_timestamp) -> (section, max_timestamp, last_offset_delta)"},
    {"check_records", check_records, METH_VARARGS,
     "check_records(section, count, base_timestamp, require_keys) -> None: the records as a producer must write "
     "them"},
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(section, count, base_offset, base_timestamp, record_type, trailer=()) -> list"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "lanes.protocol._records_c",
    "C fast path of the RecordBatch v2 records-section codec (see _records_py for the contract).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__records_c(void) { return PyModule_Create(&module); }
