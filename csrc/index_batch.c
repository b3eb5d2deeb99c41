/* Multi-threaded batch indexing; see index_batch.h. */
#include "index_batch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const hz_batch *b;
    size_t lo, hi;        /* its documents */
    hz_tok_out *out;
    hz_postings *acc;     /* the caller's for the first share, else its own */
    hz_buf buf;           /* its forward entries, end offsets in ends[lo..hi) relative to buf */
    size_t *ends;
    int rc;
} worker;

/* Feeds the fields of document i into d (reset first), as indexing.pyx's _Analyzer.feed does. */
static int feed(const hz_batch *b, size_t i, hz_doc *d, hz_tok_out *out)
{
    const hz_batch_doc *doc = &b->docs[i];
    hz_doc_reset(d);
    for (size_t f = doc->first_field; f < doc->first_field + doc->n_fields; f++) {
        const hz_batch_field *field = &b->fields[f];
        hz_doc_begin_field(d, field->fid);
        for (size_t k = field->first_text; k < field->first_text + field->n_texts; k++) {
            uint32_t offset = hz_doc_field_offset(d);
            if (offset > HZ_MAX_POSITION) {
                break;   /* no later text of this field can keep a word */
            }
            out->n_tokens = 0;
            out->norm_len = 0;
            if (b->tokenize(b->ctx, b->texts[k].data, b->texts[k].size, HZ_MAX_POSITION + 1 - offset, out) != 0
                || hz_doc_add_tokens(d, out) != 0) {
                return -1;
            }
        }
        if (hz_doc_end_field(d) != 0) {
            return -1;
        }
    }
    return 0;
}

static void *run(void *arg)
{
    worker *w = arg;
    /* The buffers written per token and per byte are local copies: the workers (and the tokenizer
     * outputs) sit next to each other, and sharing their cache lines would serialize the threads. */
    hz_tok_out out = *w->out;
    hz_buf buf = w->buf;
    hz_doc *d = hz_doc_new();
    int rc = d == NULL ? -1 : 0;
    for (size_t i = w->lo; i < w->hi && rc == 0; i++) {
        if (feed(w->b, i, d, &out) != 0 || hz_doc_encode(d, &buf) != 0
            || hz_postings_mark(w->acc, d, w->b->docs[i].docid, 1) != 0) {
            rc = -1;
            break;
        }
        w->ends[i] = buf.n;
    }
    hz_doc_free(d);
    *w->out = out;
    w->buf = buf;
    w->rc = rc;
    return NULL;
}

/* ---- the pool: threads kept between batches (a thread created per batch would start behind every
 * runnable thread of a busy machine, and the batch waits for its slowest share) ---------------- */

typedef struct {
    pthread_t tid;
    worker *task;       /* set by the submitter, NULL once run */
} pool_slot;

struct hz_pool {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    pool_slot *slots;
    unsigned n_slots, cap_slots;
    unsigned pending;   /* tasks given and not finished */
    int stop;
};

typedef struct {
    hz_pool *pool;
    unsigned slot;
} pool_arg;

static void *pool_thread(void *arg)
{
    pool_arg a = *(pool_arg *)arg;
    free(arg);
    hz_pool *p = a.pool;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->slots[a.slot].task == NULL) {
            pthread_cond_wait(&p->work, &p->lock);
        }
        if (p->stop) {
            break;
        }
        worker *w = p->slots[a.slot].task;
        pthread_mutex_unlock(&p->lock);
        run(w);
        pthread_mutex_lock(&p->lock);
        p->slots[a.slot].task = NULL;
        if (--p->pending == 0) {
            pthread_cond_signal(&p->done);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

hz_pool *hz_pool_new(void)
{
    hz_pool *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->work, NULL) != 0) {
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
    }
    return p;
}

void hz_pool_free(hz_pool *p)
{
    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->n_slots; i++) {
        pthread_join(p->slots[i].tid, NULL);
    }
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p->slots);
    free(p);
}

/* Makes the pool hold up to n threads (fewer when the system has no more to give); their number. */
static unsigned pool_reserve(hz_pool *p, unsigned n)
{
    pthread_mutex_lock(&p->lock);   /* idle threads read their slot on spurious wakeups */
    if (n > p->cap_slots) {
        pool_slot *s = realloc(p->slots, n * sizeof(pool_slot));
        if (s == NULL) {
            n = p->n_slots;
        } else {
            p->slots = s;
            p->cap_slots = n;
        }
    }
    while (p->n_slots < n) {
        pool_arg *a = malloc(sizeof(*a));
        if (a == NULL) {
            break;
        }
        *a = (pool_arg){p, p->n_slots};
        p->slots[p->n_slots].task = NULL;
        if (pthread_create(&p->slots[p->n_slots].tid, NULL, pool_thread, a) != 0) {
            free(a);
            break;
        }
        p->n_slots++;
    }
    n = p->n_slots;
    pthread_mutex_unlock(&p->lock);
    return n;
}

static size_t doc_bytes(const hz_batch *b, size_t i)
{
    const hz_batch_doc *doc = &b->docs[i];
    size_t n = 1;
    for (size_t f = doc->first_field; f < doc->first_field + doc->n_fields; f++) {
        for (size_t k = b->fields[f].first_text; k < b->fields[f].first_text + b->fields[f].n_texts; k++) {
            n += b->texts[k].size;
        }
    }
    return n;
}

int hz_index_batch(const hz_batch *b, unsigned n_threads, hz_pool *pool, hz_tok_out *outs, hz_postings *acc,
                   hz_buf *forward, size_t *ends)
{
    if (n_threads < 1) {
        n_threads = 1;
    }
    if (n_threads > b->n_docs) {
        n_threads = b->n_docs ? (unsigned)b->n_docs : 1;
    }
    worker *ws = calloc(n_threads, sizeof(worker));
    pthread_t *tids = calloc(n_threads, sizeof(pthread_t));
    char *started = calloc(n_threads, 1);
    if (ws == NULL || tids == NULL || started == NULL) {
        free(ws);
        free(tids);
        free(started);
        return -1;
    }
    /* contiguous shares of about equal text bytes, in document order */
    size_t total = 0;
    for (size_t i = 0; i < b->n_docs; i++) {
        total += doc_bytes(b, i);
    }
    size_t i = 0, seen = 0;
    for (unsigned t = 0; t < n_threads; t++) {
        ws[t].b = b;
        ws[t].out = &outs[t];
        ws[t].ends = ends;
        ws[t].lo = i;
        if (t + 1 == n_threads) {
            i = b->n_docs;
        } else {
            size_t target = total / n_threads * (t + 1);
            while (i < b->n_docs && (seen < target || i == ws[t].lo)) {
                seen += doc_bytes(b, i++);
            }
        }
        ws[t].hi = i;
    }
    int rc = 0;
    ws[0].acc = acc;
    for (unsigned t = 1; t < n_threads; t++) {
        ws[t].acc = hz_postings_new();
        if (ws[t].acc == NULL) {
            rc = -1;
        }
    }
    if (rc == 0 && pool != NULL) {
        unsigned helpers = n_threads > 1 ? pool_reserve(pool, n_threads - 1) : 0;
        pthread_mutex_lock(&pool->lock);
        for (unsigned t = 1; t <= helpers && t < n_threads; t++) {
            pool->slots[t - 1].task = &ws[t];
            pool->pending++;
            started[t] = 1;
        }
        pthread_cond_broadcast(&pool->work);
        pthread_mutex_unlock(&pool->lock);
        run(&ws[0]);
        for (unsigned t = 1; t < n_threads; t++) {
            if (!started[t]) {
                run(&ws[t]);   /* no thread to spare: this share runs here */
            }
        }
        pthread_mutex_lock(&pool->lock);
        while (pool->pending) {
            pthread_cond_wait(&pool->done, &pool->lock);
        }
        pthread_mutex_unlock(&pool->lock);
    } else if (rc == 0) {
        for (unsigned t = 1; t < n_threads; t++) {
            started[t] = pthread_create(&tids[t], NULL, run, &ws[t]) == 0;
        }
        run(&ws[0]);
        for (unsigned t = 1; t < n_threads; t++) {
            if (started[t]) {
                pthread_join(tids[t], NULL);
            } else {
                run(&ws[t]);   /* no thread to spare: this share runs here */
            }
        }
    }
    if (rc == 0) {
        /* merged in share order: the same as one thread marking every document in turn */
        for (unsigned t = 0; t < n_threads && rc == 0; t++) {
            size_t base = forward->n;
            if (ws[t].rc != 0 || (t > 0 && hz_postings_absorb(acc, ws[t].acc) != 0)) {
                rc = -1;
                break;
            }
            if (ws[t].buf.n) {
                if (forward->cap - forward->n < ws[t].buf.n) {
                    size_t cap = forward->n + ws[t].buf.n;
                    char *p = realloc(forward->p, cap);
                    if (p == NULL) {
                        rc = -1;
                        break;
                    }
                    forward->p = p;
                    forward->cap = cap;
                }
                memcpy(forward->p + forward->n, ws[t].buf.p, ws[t].buf.n);
                forward->n += ws[t].buf.n;
            }
            for (size_t k = ws[t].lo; k < ws[t].hi; k++) {
                ends[k] += base;
            }
        }
    }
    for (unsigned t = 0; t < n_threads; t++) {
        if (t > 0) {
            hz_postings_free(ws[t].acc);
        }
        hz_buf_free(&ws[t].buf);
    }
    free(ws);
    free(tids);
    free(started);
    return rc;
}
