/* HNSW graph; see hnsw.h for the model (labels, versions, tombstones, filters, persistence). */
#include "hnsw.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { ST_FREE = 0, ST_LIVE = 1, ST_TOMB = 2, ST_REMOVING = 3 };
#define REC_TOMB 1u
#define REC_HEADER 8u

typedef struct {
    float d;
    uint32_t id;
} hz_pair;

/* Per-search working memory. Stamps (visited nodes, best distance per label) are reset by bumping
 * a tag instead of clearing the arrays. */
typedef struct hz_scratch {
    struct hz_scratch *next;
    uint32_t *visited;
    size_t vcap;
    uint32_t vtag;
    uint32_t *lstamp;
    float *lbest;
    size_t lcap;
    uint32_t ltag;
    hz_pair *cand, *top, *tmp, *tmp2;
    size_t cand_cap, top_cap, tmp_cap, tmp2_cap;
    size_t cand_n, top_n;
    uint32_t *queue, *touched;
    size_t queue_cap, touched_cap;
    uint64_t *bits;
    size_t bits_cap;
    void *q;
} hz_scratch;

struct hz_hnsw {
    int metric;
    hz_kernel_fn kernel;
    size_t dim, kernel_n, vbytes, vstride;
    int m, m0, efc;
    uint64_t rng;
    double brute_factor;

    size_t cap, hw; /* slots allocated; slots below hw may be in use */
    uint8_t *vecs;
    uint32_t *links0; /* cap x (1 + m0): count, then ids */
    uint32_t **upper; /* per node: level x (1 + m), NULL on level 0 */
    uint8_t *level, *state, *dirty_flag;
    uint32_t *label, *next_in_label;
    uint64_t *ver_add, *ver_del;
    uint32_t *free_stack;
    size_t n_free;
    uint8_t *has_vec; /* only while loading */

    uint32_t *label_head, *label_live;
    size_t label_cap;

    uint32_t *dirty_list, *freed_list;
    size_t n_dirty, n_freed, freed_cap;

    size_t n_live, n_tomb, n_labels;
    size_t upper_bytes; /* bytes of the upper-level link arrays */
    int multi; /* some label owns several live nodes */
    uint32_t entry;
    int max_level;

    pthread_rwlock_t lock;
    pthread_mutex_t pool_lock;
    hz_scratch *pool;
    hz_scratch *ws; /* the writers' scratch, used under the write lock */
};

/* -- small helpers ------------------------------------------------------------------------------- */

static inline const void *vec(const hz_hnsw *g, uint32_t n) { return g->vecs + (size_t)n * g->vstride; }

static inline float dist(const hz_hnsw *g, const void *a, const void *b) {
    double out = 0.0;
    g->kernel(a, b, g->kernel_n, &out);
    switch (g->metric) {
    case HZ_METRIC_COSINE: return (float)(1.0 - out);
    case HZ_METRIC_DOT: return (float)-out;
    default: return (float)out;
    }
}

static inline uint32_t *links_at(const hz_hnsw *g, uint32_t n, int level) {
    if (level == 0) return g->links0 + (size_t)n * (size_t)(1 + g->m0);
    return g->upper[n] + (size_t)(level - 1) * (size_t)(1 + g->m);
}

static inline int cap_at(const hz_hnsw *g, int level) { return level == 0 ? g->m0 : g->m; }

static inline int visible(const hz_hnsw *g, uint32_t n, uint64_t as_of) {
    return g->ver_add[n] <= as_of && as_of < g->ver_del[n];
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Geometric level: P(level >= l) = m^-l, the paper's mL = 1/ln(m) without calling log. */
static int random_level(hz_hnsw *g) {
    int l = 0;
    uint64_t threshold = UINT64_MAX / (uint64_t)g->m;
    while (l < HZ_MAX_LEVEL && splitmix(&g->rng) < threshold) l++;
    return l;
}

static int cmp_pair(const void *a, const void *b) {
    const hz_pair *x = a, *y = b;
    if (x->d < y->d) return -1;
    if (x->d > y->d) return 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void sort_pairs(hz_pair *p, size_t n) {
    if (n < 16) { /* insertion sort: neighbour lists are short */
        for (size_t i = 1; i < n; i++) {
            hz_pair v = p[i];
            size_t j = i;
            while (j > 0 && cmp_pair(&v, &p[j - 1]) < 0) { p[j] = p[j - 1]; j--; }
            p[j] = v;
        }
        return;
    }
    qsort(p, n, sizeof(hz_pair), cmp_pair);
}

static int reserve(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Binary max-heap on d (the top results); the candidate queue stores -d in the same heap. */
static void heap_push(hz_pair *h, size_t *n, hz_pair v) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].d >= v.d) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static hz_pair heap_pop(hz_pair *h, size_t *n) {
    hz_pair top = h[0];
    hz_pair last = h[--(*n)];
    size_t i = 0, len = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= len) break;
        if (c + 1 < len && h[c + 1].d > h[c].d) c++;
        if (h[c].d <= last.d) break;
        h[i] = h[c];
        i = c;
    }
    if (len) h[i] = last;
    return top;
}

static void mark_dirty(hz_hnsw *g, uint32_t n) {
    if (!g->dirty_flag[n]) {
        g->dirty_flag[n] = 1;
        g->dirty_list[g->n_dirty++] = n;
    }
}

/* Normalizes for cosine, keeps as is otherwise; `in` and `out` in stored form (f32 or bits). */
static void to_memory(const hz_hnsw *g, const void *in, void *out) {
    if (g->metric != HZ_METRIC_COSINE) {
        if (in != out) memcpy(out, in, g->vbytes);
        return;
    }
    const float *x = in;
    float *y = out;
    double norm = 0.0;
    for (size_t i = 0; i < g->dim; i++) norm += (double)x[i] * (double)x[i];
    float inv = norm > 0.0 ? (float)(1.0 / sqrt(norm)) : 0.0f;
    for (size_t i = 0; i < g->dim; i++) y[i] = x[i] * inv;
}

void hz_hnsw_encode(const hz_hnsw *g, const float *in, void *out) {
    if (g->metric != HZ_METRIC_HAMMING) {
        memcpy(out, in, g->vbytes);
        return;
    }
    uint8_t *b = out;
    memset(b, 0, g->vbytes);
    for (size_t i = 0; i < g->dim; i++)
        if (in[i] > 0.0f) b[i >> 3] |= (uint8_t)(1u << (i & 7));
}

size_t hz_hnsw_stored_bytes(const hz_hnsw *g) { return g->vbytes; }

/* -- allocation ---------------------------------------------------------------------------------- */

static int grow_nodes(hz_hnsw *g, size_t need) {
    if (need <= g->cap) return 0;
    size_t n = g->cap ? g->cap : 256;
    while (n < need) n = n + n / 2 + 16;
    size_t old = g->cap;
#define GROW(field, type)                                                                          \
    do {                                                                                           \
        type *p_ = realloc(g->field, n * sizeof(type));                                            \
        if (!p_) return -1;                                                                        \
        g->field = p_;                                                                             \
    } while (0)
    GROW(upper, uint32_t *);
    GROW(level, uint8_t);
    GROW(state, uint8_t);
    GROW(dirty_flag, uint8_t);
    GROW(label, uint32_t);
    GROW(next_in_label, uint32_t);
    GROW(ver_add, uint64_t);
    GROW(ver_del, uint64_t);
    GROW(free_stack, uint32_t);
    GROW(dirty_list, uint32_t);
    if (g->has_vec) GROW(has_vec, uint8_t);
#undef GROW
    uint32_t *l0 = realloc(g->links0, n * (size_t)(1 + g->m0) * sizeof(uint32_t));
    if (!l0) return -1;
    g->links0 = l0;
    void *v = NULL;
    if (posix_memalign(&v, 64, n * g->vstride) != 0) return -1;
    if (g->vecs) memcpy(v, g->vecs, old * g->vstride);
    free(g->vecs);
    g->vecs = v;
    for (size_t i = old; i < n; i++) {
        g->upper[i] = NULL;
        g->state[i] = ST_FREE;
        g->dirty_flag[i] = 0;
        g->level[i] = 0;
        if (g->has_vec) g->has_vec[i] = 0;
    }
    g->cap = n;
    return 0;
}

static int grow_labels(hz_hnsw *g, size_t need) {
    if (need <= g->label_cap) return 0;
    size_t n = g->label_cap ? g->label_cap : 256;
    while (n < need) n *= 2;
    uint32_t *h = realloc(g->label_head, n * sizeof(uint32_t));
    if (!h) return -1;
    g->label_head = h;
    uint32_t *c = realloc(g->label_live, n * sizeof(uint32_t));
    if (!c) return -1;
    g->label_live = c;
    for (size_t i = g->label_cap; i < n; i++) {
        g->label_head[i] = HZ_NONE;
        g->label_live[i] = 0;
    }
    g->label_cap = n;
    return 0;
}

/* Makes the scratch fit the graph's current sizes (called with the lock held). */
static int scratch_fit(hz_hnsw *g, hz_scratch *s, size_t ef) {
    if (s->vcap < g->cap) {
        uint32_t *v = realloc(s->visited, g->cap * sizeof(uint32_t));
        if (!v) return -1;
        memset(v + s->vcap, 0, (g->cap - s->vcap) * sizeof(uint32_t));
        s->visited = v;
        s->vcap = g->cap;
    }
    if (s->lcap < g->label_cap) {
        uint32_t *st = realloc(s->lstamp, g->label_cap * sizeof(uint32_t));
        if (!st) return -1;
        memset(st + s->lcap, 0, (g->label_cap - s->lcap) * sizeof(uint32_t));
        s->lstamp = st;
        float *b = realloc(s->lbest, g->label_cap * sizeof(float));
        if (!b) return -1;
        s->lbest = b;
        s->lcap = g->label_cap;
    }
    size_t m0 = (size_t)g->m0 + 2;
    if (reserve((void **)&s->top, &s->top_cap, ef + 2, sizeof(hz_pair))) return -1;
    if (reserve((void **)&s->cand, &s->cand_cap, ef + m0, sizeof(hz_pair))) return -1;
    if (reserve((void **)&s->tmp, &s->tmp_cap, ef + m0, sizeof(hz_pair))) return -1;
    if (reserve((void **)&s->tmp2, &s->tmp2_cap, m0, sizeof(hz_pair))) return -1;
    if (!s->q && posix_memalign(&s->q, 64, g->vstride) != 0) {
        s->q = NULL;
        return -1;
    }
    return 0;
}

static void scratch_free(hz_scratch *s) {
    if (!s) return;
    free(s->visited);
    free(s->lstamp);
    free(s->lbest);
    free(s->cand);
    free(s->top);
    free(s->tmp);
    free(s->tmp2);
    free(s->queue);
    free(s->touched);
    free(s->bits);
    free(s->q);
    free(s);
}

static hz_scratch *scratch_acquire(hz_hnsw *g) {
    pthread_mutex_lock(&g->pool_lock);
    hz_scratch *s = g->pool;
    if (s) g->pool = s->next;
    pthread_mutex_unlock(&g->pool_lock);
    if (!s) s = calloc(1, sizeof(hz_scratch));
    return s;
}

static void scratch_release(hz_hnsw *g, hz_scratch *s) {
    pthread_mutex_lock(&g->pool_lock);
    s->next = g->pool;
    g->pool = s;
    pthread_mutex_unlock(&g->pool_lock);
}

static inline uint32_t next_tag(uint32_t *tag, uint32_t *arr, size_t n) {
    if (++*tag == 0) {
        memset(arr, 0, n * sizeof(uint32_t));
        *tag = 1;
    }
    return *tag;
}

/* -- lifecycle ----------------------------------------------------------------------------------- */

hz_hnsw *hz_hnsw_new(const hz_hnsw_params *p) {
    if (!p || !p->kernel || p->dim == 0 || p->m < 2 || p->m > 256 || p->ef_construction < 1) return NULL;
    if (p->metric < HZ_METRIC_COSINE || p->metric > HZ_METRIC_HAMMING) return NULL;
    hz_hnsw *g = calloc(1, sizeof(hz_hnsw));
    if (!g) return NULL;
    g->metric = p->metric;
    g->kernel = p->kernel;
    g->dim = p->dim;
    g->vbytes = p->metric == HZ_METRIC_HAMMING ? (p->dim + 7) / 8 : p->dim * sizeof(float);
    g->kernel_n = p->metric == HZ_METRIC_HAMMING ? g->vbytes : p->dim;
    g->vstride = (g->vbytes + 15) & ~(size_t)15;
    g->m = p->m;
    g->m0 = 2 * p->m;
    g->efc = p->ef_construction;
    g->rng = p->seed ^ 0x5DEECE66Dull;
    g->brute_factor = 1.0;
    g->entry = HZ_NONE;
    g->max_level = -1;
    pthread_rwlock_init(&g->lock, NULL);
    pthread_mutex_init(&g->pool_lock, NULL);
    g->ws = calloc(1, sizeof(hz_scratch));
    if (!g->ws || grow_nodes(g, 256) || grow_labels(g, 256)) {
        hz_hnsw_free(g);
        return NULL;
    }
    return g;
}

void hz_hnsw_free(hz_hnsw *g) {
    if (!g) return;
    for (size_t i = 0; i < g->cap; i++) free(g->upper ? g->upper[i] : NULL);
    free(g->upper);
    free(g->links0);
    free(g->vecs);
    free(g->level);
    free(g->state);
    free(g->dirty_flag);
    free(g->label);
    free(g->next_in_label);
    free(g->ver_add);
    free(g->ver_del);
    free(g->free_stack);
    free(g->has_vec);
    free(g->label_head);
    free(g->label_live);
    free(g->dirty_list);
    free(g->freed_list);
    while (g->pool) {
        hz_scratch *s = g->pool;
        g->pool = s->next;
        scratch_free(s);
    }
    scratch_free(g->ws);
    pthread_rwlock_destroy(&g->lock);
    pthread_mutex_destroy(&g->pool_lock);
    free(g);
}

void hz_hnsw_set_brute_factor(hz_hnsw *g, double factor) { g->brute_factor = factor; }

/* -- graph walk ---------------------------------------------------------------------------------- */

typedef struct {
    uint64_t as_of;        /* visibility; HZ_LIVE - 1 = every live node (writes) */
    const uint64_t *bits;  /* label filter bitset, or NULL */
    size_t nbits;
    uint32_t exclude;      /* a node never accepted (the one being linked) */
    int dedupe;            /* keep one result per label (multi-vector labels) */
} accept_t;

static inline int accepts(const hz_hnsw *g, hz_scratch *s, const accept_t *a, uint32_t n, float d) {
    if (n == a->exclude || !visible(g, n, a->as_of)) return 0;
    uint32_t L = g->label[n];
    if (a->bits && (L >= a->nbits || !((a->bits[L >> 6] >> (L & 63)) & 1))) return 0;
    if (a->dedupe) {
        if (s->lstamp[L] == s->ltag && s->lbest[L] <= d) return 0;
        s->lstamp[L] = s->ltag;
        s->lbest[L] = d;
    }
    return 1;
}

/* Greedy descent on one level: the closest node reachable by always moving closer. */
static void greedy(const hz_hnsw *g, const void *q, int level, uint32_t *cur, float *curd) {
    int changed = 1;
    while (changed) {
        changed = 0;
        const uint32_t *l = links_at(g, *cur, level);
        uint32_t cnt = l[0];
        for (uint32_t i = 1; i <= cnt; i++) {
            uint32_t nb = l[i];
            float d = dist(g, q, vec(g, nb));
            if (d < *curd) {
                *curd = d;
                *cur = nb;
                changed = 1;
            }
        }
    }
}

/* Best-first search of one level from `ep`: on return s->top is a max-heap of at most ef accepted
 * nodes. Every node is traversed (tombstones and filtered-out nodes too, so they never cut the graph);
 * the walk stops once ef nodes are accepted and no candidate is closer than the worst of them. */
static int search_layer(const hz_hnsw *g, hz_scratch *s, const void *q, uint32_t ep, float ep_d,
                        size_t ef, int level, const accept_t *a) {
    uint32_t tag = next_tag(&s->vtag, s->visited, s->vcap);
    s->top_n = 0;
    s->cand_n = 0;
    s->visited[ep] = tag;
    float lower = INFINITY;
    if (accepts(g, s, a, ep, ep_d)) {
        heap_push(s->top, &s->top_n, (hz_pair){ep_d, ep});
        lower = ep_d;
    }
    heap_push(s->cand, &s->cand_n, (hz_pair){-ep_d, ep});
    size_t stride = (size_t)(1 + g->m0);
    while (s->cand_n) {
        hz_pair c = s->cand[0];
        if (-c.d > lower && s->top_n >= ef) break;
        heap_pop(s->cand, &s->cand_n);
        const uint32_t *l = level == 0 ? g->links0 + (size_t)c.id * stride : links_at(g, c.id, level);
        uint32_t cnt = l[0];
        for (uint32_t i = 1; i <= cnt; i++) __builtin_prefetch(vec(g, l[i]));
        if (s->cand_n + cnt + 1 > s->cand_cap &&
            reserve((void **)&s->cand, &s->cand_cap, s->cand_n + cnt + 1, sizeof(hz_pair)))
            return -1;
        for (uint32_t i = 1; i <= cnt; i++) {
            uint32_t nb = l[i];
            if (s->visited[nb] == tag) continue;
            s->visited[nb] = tag;
            float d = dist(g, q, vec(g, nb));
            if (s->top_n < ef || d < lower) {
                heap_push(s->cand, &s->cand_n, (hz_pair){-d, nb});
                if (accepts(g, s, a, nb, d)) {
                    heap_push(s->top, &s->top_n, (hz_pair){d, nb});
                    if (s->top_n > ef) heap_pop(s->top, &s->top_n);
                    lower = s->top[0].d;
                }
            }
        }
    }
    return 0;
}

/* Drains s->top into s->tmp in ascending order; returns the count. */
static size_t drain_sorted(hz_scratch *s) {
    size_t n = s->top_n;
    for (size_t i = n; i > 0; i--) s->tmp[i - 1] = heap_pop(s->top, &s->top_n);
    return n;
}

/* HNSW's neighbour selection heuristic (algorithm 4, without extension): scanning candidates from
 * the closest, keep one only if it is closer to the base than to every kept one. In place on a sorted
 * array; returns how many were kept (at most `keep`). */
static size_t select_neighbours(const hz_hnsw *g, hz_pair *c, size_t n, size_t keep) {
    if (n <= keep) return n;
    size_t r = 0;
    for (size_t i = 0; i < n && r < keep; i++) {
        const void *vi = vec(g, c[i].id);
        int good = 1;
        for (size_t j = 0; j < r; j++) {
            if (dist(g, vi, vec(g, c[j].id)) < c[i].d) {
                good = 0;
                break;
            }
        }
        if (good) c[r++] = c[i];
    }
    return r;
}

/* Adds `node` to the list of `s` at `level`; a full list is re-pruned by the heuristic among its
 * live members and the newcomer (tombstones are dropped there: they are never chosen again). */
static void connect(hz_hnsw *g, uint32_t s, uint32_t node, float d, int level) {
    uint32_t *l = links_at(g, s, level);
    uint32_t cnt = l[0];
    int cap = cap_at(g, level);
    for (uint32_t i = 1; i <= cnt; i++)
        if (l[i] == node) return;
    mark_dirty(g, s);
    if ((int)cnt < cap) {
        l[1 + cnt] = node;
        l[0] = cnt + 1;
        return;
    }
    hz_pair *c = g->ws->tmp2;
    size_t n = 0;
    const void *vs = vec(g, s);
    for (uint32_t i = 1; i <= cnt; i++)
        if (g->state[l[i]] == ST_LIVE) c[n++] = (hz_pair){dist(g, vs, vec(g, l[i])), l[i]};
    c[n++] = (hz_pair){d, node};
    sort_pairs(c, n);
    n = select_neighbours(g, c, n, (size_t)cap);
    for (size_t i = 0; i < n; i++) l[1 + i] = c[i].id;
    l[0] = (uint32_t)n;
}

/* Links `node` (already placed) at levels <= its level, starting the descent at `entry`. */
static int link_node(hz_hnsw *g, uint32_t node, uint32_t entry, int top_level) {
    hz_scratch *s = g->ws;
    const void *v = vec(g, node);
    int level = g->level[node];
    uint32_t cur = entry;
    float curd = dist(g, v, vec(g, cur));
    for (int l = top_level; l > level; l--) greedy(g, v, l, &cur, &curd);
    accept_t a = {HZ_LIVE - 1, NULL, 0, node, 0};
    for (int l = level < top_level ? level : top_level; l >= 0; l--) {
        if (search_layer(g, s, v, cur, curd, (size_t)g->efc, l, &a)) return -1;
        size_t n = drain_sorted(s);
        if (n == 0) continue; /* only tombstones around: keep descending from cur */
        cur = s->tmp[0].id;
        curd = s->tmp[0].d;
        n = select_neighbours(g, s->tmp, n, (size_t)g->m);
        uint32_t *l_own = links_at(g, node, l);
        for (size_t i = 0; i < n; i++) l_own[1 + i] = s->tmp[i].id;
        l_own[0] = (uint32_t)n;
        for (size_t i = 0; i < n; i++) connect(g, l_own[1 + i], node, s->tmp[i].d, l);
    }
    return 0;
}

/* -- mutations ----------------------------------------------------------------------------------- */

int hz_hnsw_insert(hz_hnsw *g, uint32_t label, const float *vector, uint64_t version, uint32_t *node_out) {
    pthread_rwlock_wrlock(&g->lock);
    int rc = -1;
    if (grow_labels(g, (size_t)label + 1)) goto out;
    if (!g->n_free && grow_nodes(g, g->hw + 1)) goto out;
    if (scratch_fit(g, g->ws, (size_t)g->efc)) goto out;
    int level = random_level(g);
    uint32_t *up = NULL;
    size_t up_bytes = (size_t)level * (size_t)(1 + g->m) * sizeof(uint32_t);
    if (level > 0 && !(up = calloc(1, up_bytes))) goto out;
    g->upper_bytes += up_bytes;
    uint32_t node = g->n_free ? g->free_stack[--g->n_free] : (uint32_t)g->hw++;
    g->upper[node] = up;
    g->links0[(size_t)node * (size_t)(1 + g->m0)] = 0;
    void *v = g->vecs + (size_t)node * g->vstride;
    hz_hnsw_encode(g, vector, v);
    to_memory(g, v, v);
    g->level[node] = (uint8_t)level;
    g->state[node] = ST_LIVE;
    g->label[node] = label;
    g->ver_add[node] = version;
    g->ver_del[node] = HZ_LIVE;
    g->next_in_label[node] = g->label_head[label];
    g->label_head[label] = node;
    if (g->label_live[label]++ == 0) g->n_labels++;
    else g->multi = 1;
    g->n_live++;
    mark_dirty(g, node);
    if (node_out) *node_out = node;
    rc = 0;
    if (g->entry == HZ_NONE) {
        g->entry = node;
        g->max_level = level;
        goto out;
    }
    if (link_node(g, node, g->entry, g->max_level)) {
        rc = -1; /* out of memory mid-link: the node stays, with the links made so far */
        goto out;
    }
    if (level > g->max_level) {
        g->entry = node;
        g->max_level = level;
    }
out:
    pthread_rwlock_unlock(&g->lock);
    return rc;
}

size_t hz_hnsw_delete_label(hz_hnsw *g, uint32_t label, uint64_t version) {
    pthread_rwlock_wrlock(&g->lock);
    size_t count = 0;
    if (label < g->label_cap) {
        for (uint32_t n = g->label_head[label]; n != HZ_NONE; n = g->next_in_label[n]) {
            if (g->state[n] != ST_LIVE) continue;
            g->state[n] = ST_TOMB;
            g->ver_del[n] = version;
            mark_dirty(g, n);
            count++;
        }
        if (count) {
            g->label_live[label] = 0;
            g->n_labels--;
            g->n_live -= count;
            g->n_tomb += count;
        }
    }
    pthread_rwlock_unlock(&g->lock);
    return count;
}

static void unchain(hz_hnsw *g, uint32_t n) {
    uint32_t L = g->label[n];
    uint32_t *p = &g->label_head[L];
    while (*p != HZ_NONE && *p != n) p = &g->next_in_label[*p];
    if (*p == n) *p = g->next_in_label[n];
}

/* Rebuilds the list of `u` at `level`: its kept neighbours plus the live nodes reached through its
 * removed ones (a walk across removed nodes only), pruned by the heuristic. */
static int repair_list(hz_hnsw *g, uint32_t u, int level) {
    hz_scratch *s = g->ws;
    uint32_t *l = links_at(g, u, level);
    uint32_t cnt = l[0];
    int touched = 0;
    for (uint32_t i = 1; i <= cnt; i++)
        if (g->state[l[i]] == ST_REMOVING) touched = 1;
    if (!touched) return 0;
    uint32_t tag = next_tag(&s->vtag, s->visited, s->vcap);
    s->visited[u] = tag;
    size_t nc = 0, qn = 0, qi = 0;
    const void *vu = vec(g, u);
    int cap = cap_at(g, level);
    size_t max_walk = (size_t)cap * 8; /* bounds the walk through long chains of removed nodes */
    for (uint32_t i = 1; i <= cnt; i++) {
        uint32_t x = l[i];
        if (s->visited[x] == tag) continue;
        s->visited[x] = tag;
        if (g->state[x] == ST_REMOVING) {
            if (reserve((void **)&s->queue, &s->queue_cap, qn + 1, sizeof(uint32_t))) return -1;
            s->queue[qn++] = x;
        } else if (g->state[x] == ST_LIVE) {
            if (reserve((void **)&s->tmp, &s->tmp_cap, nc + 1, sizeof(hz_pair))) return -1;
            s->tmp[nc++] = (hz_pair){dist(g, vu, vec(g, x)), x};
        }
    }
    while (qi < qn && qi < max_walk) {
        uint32_t r = s->queue[qi++];
        if (g->level[r] < level) continue;
        const uint32_t *lr = links_at(g, r, level);
        for (uint32_t i = 1; i <= lr[0]; i++) {
            uint32_t y = lr[i];
            if (s->visited[y] == tag) continue;
            s->visited[y] = tag;
            if (g->state[y] == ST_REMOVING) {
                if (reserve((void **)&s->queue, &s->queue_cap, qn + 1, sizeof(uint32_t))) return -1;
                s->queue[qn++] = y;
            } else if (g->state[y] == ST_LIVE && g->level[y] >= level) {
                if (reserve((void **)&s->tmp, &s->tmp_cap, nc + 1, sizeof(hz_pair))) return -1;
                s->tmp[nc++] = (hz_pair){dist(g, vu, vec(g, y)), y};
            }
        }
    }
    sort_pairs(s->tmp, nc);
    nc = select_neighbours(g, s->tmp, nc, (size_t)cap);
    for (size_t i = 0; i < nc; i++) l[1 + i] = s->tmp[i].id;
    l[0] = (uint32_t)nc;
    mark_dirty(g, u);
    return 0;
}

/* Relinks a node left without neighbours at `level` by searching the graph for them. */
static int reconnect(hz_hnsw *g, uint32_t u, int level) {
    hz_scratch *s = g->ws;
    const void *v = vec(g, u);
    uint32_t cur = g->entry;
    if (cur == HZ_NONE || cur == u) return 0;
    float curd = dist(g, v, vec(g, cur));
    for (int l = g->max_level; l > level; l--) greedy(g, v, l, &cur, &curd);
    accept_t a = {HZ_LIVE - 1, NULL, 0, u, 0};
    if (search_layer(g, s, v, cur, curd, (size_t)g->efc, level, &a)) return -1;
    size_t n = drain_sorted(s);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) /* only nodes that exist on this level can hold the link */
        if (g->level[s->tmp[i].id] >= level) s->tmp[k++] = s->tmp[i];
    k = select_neighbours(g, s->tmp, k, (size_t)g->m);
    uint32_t *l = links_at(g, u, level);
    for (size_t i = 0; i < k; i++) l[1 + i] = s->tmp[i].id;
    l[0] = (uint32_t)k;
    mark_dirty(g, u);
    for (size_t i = 0; i < k; i++) connect(g, l[1 + i], u, s->tmp[i].d, level);
    return 0;
}

size_t hz_hnsw_cleanup(hz_hnsw *g, uint64_t max_version) {
    pthread_rwlock_wrlock(&g->lock);
    size_t removed = 0;
    for (size_t n = 0; n < g->hw; n++) {
        if (g->state[n] == ST_TOMB && g->ver_del[n] <= max_version) {
            g->state[n] = ST_REMOVING;
            removed++;
        }
    }
    if (!removed) goto out;
    if (scratch_fit(g, g->ws, (size_t)g->efc) ||
        reserve((void **)&g->freed_list, &g->freed_cap, g->n_freed + removed, sizeof(uint32_t))) {
        for (size_t n = 0; n < g->hw; n++)
            if (g->state[n] == ST_REMOVING) g->state[n] = ST_TOMB;
        removed = (size_t)-1;
        goto out;
    }
    /* The entry point must be a surviving node before any reconnecting search. */
    if (g->entry != HZ_NONE && g->state[g->entry] == ST_REMOVING) {
        uint32_t best = HZ_NONE;
        for (size_t n = 0; n < g->hw; n++) {
            uint8_t st = g->state[n];
            if (st != ST_LIVE && st != ST_TOMB) continue;
            if (best == HZ_NONE || g->level[n] > g->level[best] ||
                (g->level[n] == g->level[best] && st == ST_LIVE && g->state[best] != ST_LIVE))
                best = (uint32_t)n;
        }
        g->entry = best;
        g->max_level = best == HZ_NONE ? -1 : g->level[best];
    }
    for (int l = 0; l <= g->max_level; l++) {
        for (size_t n = 0; n < g->hw; n++) {
            uint8_t st = g->state[n];
            if ((st != ST_LIVE && st != ST_TOMB) || g->level[n] < l) continue;
            if (repair_list(g, (uint32_t)n, l)) {
                removed = (size_t)-1;
                goto undo;
            }
        }
    }
    /* Removed nodes leave; live nodes that lost every link are searched back into the graph. */
    for (size_t n = 0; n < g->hw; n++) {
        if (g->state[n] != ST_REMOVING) continue;
        unchain(g, (uint32_t)n);
        g->upper_bytes -= (size_t)g->level[n] * (size_t)(1 + g->m) * sizeof(uint32_t);
        free(g->upper[n]);
        g->upper[n] = NULL;
        g->links0[n * (size_t)(1 + g->m0)] = 0;
        g->state[n] = ST_FREE;
        g->free_stack[g->n_free++] = (uint32_t)n;
        g->freed_list[g->n_freed++] = (uint32_t)n;
        g->n_tomb--;
    }
    if (g->n_live > 1) {
        for (int l = 0; l <= g->max_level; l++) {
            for (size_t n = 0; n < g->hw; n++) {
                if (g->state[n] != ST_LIVE || g->level[n] < l || links_at(g, (uint32_t)n, l)[0]) continue;
                if (reconnect(g, (uint32_t)n, l)) goto out;
            }
        }
    }
    goto out;
undo:
    for (size_t n = 0; n < g->hw; n++)
        if (g->state[n] == ST_REMOVING) g->state[n] = ST_TOMB;
out:
    pthread_rwlock_unlock(&g->lock);
    return removed;
}

/* -- search -------------------------------------------------------------------------------------- */

static void prepare_query(const hz_hnsw *g, hz_scratch *s, const float *query) {
    hz_hnsw_encode(g, query, s->q);
    to_memory(g, s->q, s->q);
}

/* Exhaustive search over the filter's labels (or every node): the best distance per label, then
 * the k best labels. */
static int exact(const hz_hnsw *g, hz_scratch *s, const uint32_t *filter, size_t n_filter, size_t k,
                 uint64_t as_of, uint32_t *labels, float *distances, size_t *n_out) {
    uint32_t tag = next_tag(&s->ltag, s->lstamp, s->lcap);
    size_t nt = 0;
    if (reserve((void **)&s->touched, &s->touched_cap, g->label_cap, sizeof(uint32_t))) return -1;
#define CONSIDER(n)                                                                                \
    do {                                                                                           \
        uint32_t L_ = g->label[n];                                                                 \
        float d_ = dist(g, s->q, vec(g, n));                                                       \
        if (s->lstamp[L_] != tag) {                                                                \
            s->lstamp[L_] = tag;                                                                   \
            s->lbest[L_] = d_;                                                                     \
            s->touched[nt++] = L_;                                                                 \
        } else if (d_ < s->lbest[L_]) {                                                            \
            s->lbest[L_] = d_;                                                                     \
        }                                                                                          \
    } while (0)
    if (filter) {
        for (size_t i = 0; i < n_filter; i++) {
            uint32_t L = filter[i];
            if (L >= g->label_cap) break; /* sorted: the rest own no node */
            for (uint32_t n = g->label_head[L]; n != HZ_NONE; n = g->next_in_label[n])
                if (g->state[n] != ST_FREE && visible(g, n, as_of)) CONSIDER(n);
        }
    } else {
        for (size_t n = 0; n < g->hw; n++)
            if (g->state[n] != ST_FREE && visible(g, (uint32_t)n, as_of)) CONSIDER(n);
    }
#undef CONSIDER
    if (reserve((void **)&s->top, &s->top_cap, k + 2, sizeof(hz_pair))) return -1;
    s->top_n = 0;
    for (size_t i = 0; i < nt; i++) {
        uint32_t L = s->touched[i];
        float d = s->lbest[L];
        if (s->top_n < k) heap_push(s->top, &s->top_n, (hz_pair){d, L});
        else if (d < s->top[0].d || (d == s->top[0].d && L < s->top[0].id)) {
            heap_pop(s->top, &s->top_n);
            heap_push(s->top, &s->top_n, (hz_pair){d, L});
        }
    }
    if (reserve((void **)&s->tmp, &s->tmp_cap, s->top_n + 1, sizeof(hz_pair))) return -1;
    size_t n = drain_sorted(s);
    for (size_t i = 0; i < n; i++) {
        labels[i] = s->tmp[i].id;
        distances[i] = s->tmp[i].d;
    }
    *n_out = n;
    return 0;
}

int hz_hnsw_search(hz_hnsw *g, const float *query, size_t k, size_t ef, const uint32_t *filter,
                   size_t n_filter, uint64_t as_of, int exact_only, uint32_t *labels, float *distances,
                   size_t *n_out) {
    *n_out = 0;
    if (k == 0) return 0;
    if (ef < k) ef = k;
    hz_scratch *s = scratch_acquire(g);
    if (!s) return -1;
    pthread_rwlock_rdlock(&g->lock);
    int rc = -1;
    if (scratch_fit(g, s, ef)) goto out;
    rc = 0;
    if (g->entry == HZ_NONE || (filter && n_filter == 0)) goto out;
    prepare_query(g, s, query);
    /* Cost model: the exact scan computes n_filter distances; a filtered walk expands about every
     * node closer than the ef-th match, ef * n_live / n_filter nodes of up to 2m links each. */
    double walk = (double)ef * (double)g->n_live * (double)g->m0;
    if (exact_only || g->n_live <= ef ||
        (filter && (double)n_filter * (double)n_filter <= g->brute_factor * walk)) {
        rc = exact(g, s, filter, n_filter, k, as_of, labels, distances, n_out);
        goto out;
    }
    accept_t a = {as_of, NULL, 0, HZ_NONE, g->multi};
    if (filter) {
        size_t words = (g->label_cap + 63) / 64;
        if (reserve((void **)&s->bits, &s->bits_cap, words, sizeof(uint64_t))) {
            rc = -1;
            goto out;
        }
        memset(s->bits, 0, words * sizeof(uint64_t));
        for (size_t i = 0; i < n_filter && filter[i] < g->label_cap; i++)
            s->bits[filter[i] >> 6] |= 1ull << (filter[i] & 63);
        a.bits = s->bits;
        a.nbits = g->label_cap;
    }
    if (a.dedupe) next_tag(&s->ltag, s->lstamp, s->lcap);
    uint32_t cur = g->entry;
    float curd = dist(g, s->q, vec(g, cur));
    for (int l = g->max_level; l > 0; l--) greedy(g, s->q, l, &cur, &curd);
    if (search_layer(g, s, s->q, cur, curd, ef, 0, &a)) {
        rc = -1;
        goto out;
    }
    size_t n = drain_sorted(s), got = 0;
    uint32_t tag = next_tag(&s->ltag, s->lstamp, s->lcap);
    for (size_t i = 0; i < n && got < k; i++) {
        uint32_t L = g->label[s->tmp[i].id];
        if (s->lstamp[L] == tag) continue;
        s->lstamp[L] = tag;
        labels[got] = L;
        distances[got] = s->tmp[i].d;
        got++;
    }
    *n_out = got;
    /* Fewer than k: the graph could not reach enough matches (tiny or disconnected remainder, very
     * selective visibility); the exact search answers min(k, matching). */
    if (got < k && (filter ? n_filter > got : g->n_labels > got))
        rc = exact(g, s, filter, n_filter, k, as_of, labels, distances, n_out);
out:
    pthread_rwlock_unlock(&g->lock);
    scratch_release(g, s);
    return rc;
}

/* -- introspection ------------------------------------------------------------------------------- */

void hz_hnsw_stats_get(hz_hnsw *g, hz_hnsw_stats *o) {
    pthread_rwlock_rdlock(&g->lock);
    o->slots = g->n_live + g->n_tomb;
    o->live = g->n_live;
    o->tombstones = g->n_tomb;
    o->labels = g->n_labels;
    o->entry = g->entry;
    o->max_level = g->max_level;
    size_t mem = g->cap * (g->vstride + (size_t)(1 + g->m0) * 4 + sizeof(void *) + 3 + 8 + 16 + 8);
    mem += g->upper_bytes + g->label_cap * 8;
    o->memory = mem;
    pthread_rwlock_unlock(&g->lock);
}

size_t hz_hnsw_label_nodes(hz_hnsw *g, uint32_t label, uint32_t *out, size_t cap) {
    pthread_rwlock_rdlock(&g->lock);
    size_t count = 0;
    if (label < g->label_cap) {
        for (uint32_t n = g->label_head[label]; n != HZ_NONE; n = g->next_in_label[n]) {
            if (g->state[n] != ST_LIVE) continue;
            if (count < cap) out[count] = n;
            count++;
        }
    }
    pthread_rwlock_unlock(&g->lock);
    return count;
}

size_t hz_hnsw_labels(hz_hnsw *g, uint64_t as_of, uint32_t *out, size_t cap) {
    pthread_rwlock_rdlock(&g->lock);
    size_t count = 0;
    for (size_t L = 0; L < g->label_cap; L++) {
        for (uint32_t n = g->label_head[L]; n != HZ_NONE; n = g->next_in_label[n]) {
            if (g->state[n] != ST_FREE && visible(g, n, as_of)) {
                if (count < cap) out[count] = (uint32_t)L;
                count++;
                break;
            }
        }
    }
    pthread_rwlock_unlock(&g->lock);
    return count;
}

int hz_hnsw_node_state(hz_hnsw *g, uint32_t node) {
    pthread_rwlock_rdlock(&g->lock);
    int st = node < g->hw ? g->state[node] : ST_FREE;
    pthread_rwlock_unlock(&g->lock);
    return st == ST_LIVE ? 1 : st == ST_TOMB ? 2 : 0;
}

int hz_hnsw_neighbours(hz_hnsw *g, uint32_t node, int level, uint32_t *out, size_t cap) {
    pthread_rwlock_rdlock(&g->lock);
    int count = -1;
    if (node < g->hw && g->state[node] != ST_FREE && level >= 0 && level <= g->level[node]) {
        const uint32_t *l = links_at(g, node, level);
        count = (int)l[0];
        for (uint32_t i = 0; i < l[0] && i < cap; i++) out[i] = l[1 + i];
    }
    pthread_rwlock_unlock(&g->lock);
    return count;
}

/* -- persistence --------------------------------------------------------------------------------- */

static inline void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline uint32_t get_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static size_t record_size_locked(const hz_hnsw *g, uint32_t node) {
    if (node >= g->hw || g->state[node] == ST_FREE) return 0;
    size_t size = REC_HEADER;
    for (int l = 0; l <= g->level[node]; l++) size += 4 + 4 * (size_t)links_at(g, node, l)[0];
    if (g->state[node] == ST_TOMB) size += g->vbytes;
    return size;
}

size_t hz_hnsw_node_record_size(hz_hnsw *g, uint32_t node) {
    pthread_rwlock_rdlock(&g->lock);
    size_t size = record_size_locked(g, node);
    pthread_rwlock_unlock(&g->lock);
    return size;
}

int hz_hnsw_node_record(hz_hnsw *g, uint32_t node, uint8_t *out) {
    pthread_rwlock_rdlock(&g->lock);
    int rc = -1;
    if (record_size_locked(g, node)) {
        put_u32(out, g->label[node]);
        out[4] = g->level[node];
        out[5] = g->state[node] == ST_TOMB ? REC_TOMB : 0;
        out[6] = out[7] = 0;
        uint8_t *p = out + REC_HEADER;
        for (int l = 0; l <= g->level[node]; l++) {
            const uint32_t *lk = links_at(g, node, l);
            put_u32(p, lk[0]);
            memcpy(p + 4, lk + 1, 4 * (size_t)lk[0]);
            p += 4 + 4 * (size_t)lk[0];
        }
        if (g->state[node] == ST_TOMB) memcpy(p, vec(g, node), g->vbytes);
        rc = 0;
    }
    pthread_rwlock_unlock(&g->lock);
    return rc;
}

const uint32_t *hz_hnsw_dirty(hz_hnsw *g, size_t *n) {
    *n = g->n_dirty;
    return g->dirty_list;
}

const uint32_t *hz_hnsw_freed(hz_hnsw *g, size_t *n) {
    *n = g->n_freed;
    return g->freed_list;
}

void hz_hnsw_clear_dirty(hz_hnsw *g) {
    pthread_rwlock_wrlock(&g->lock);
    for (size_t i = 0; i < g->n_dirty; i++) g->dirty_flag[g->dirty_list[i]] = 0;
    g->n_dirty = 0;
    g->n_freed = 0;
    pthread_rwlock_unlock(&g->lock);
}

int hz_hnsw_load_node(hz_hnsw *g, uint32_t node, const uint8_t *rec, size_t len) {
    if (len < REC_HEADER || node == HZ_NONE) return -2;
    uint32_t label = get_u32(rec);
    int level = rec[4];
    int tomb = (rec[5] & REC_TOMB) != 0;
    if (level > HZ_MAX_LEVEL || label == HZ_NONE) return -2;
    /* validate the layout before touching the graph */
    size_t off = REC_HEADER;
    for (int l = 0; l <= level; l++) {
        if (off + 4 > len) return -2;
        uint32_t cnt = get_u32(rec + off);
        if ((int)cnt > cap_at(g, l)) return -2;
        off += 4 + 4 * (size_t)cnt;
        if (off > len) return -2;
    }
    if (off + (tomb ? g->vbytes : 0) != len) return -2;
    pthread_rwlock_wrlock(&g->lock);
    int rc = -1;
    if (!g->has_vec) {
        g->has_vec = calloc(g->cap, 1);
        if (!g->has_vec) goto out;
    }
    if (grow_nodes(g, (size_t)node + 1) || grow_labels(g, (size_t)label + 1)) goto out;
    rc = -2;
    if (g->state[node] != ST_FREE) goto out;
    uint32_t *up = NULL;
    rc = -1;
    size_t up_bytes = (size_t)level * (size_t)(1 + g->m) * sizeof(uint32_t);
    if (level > 0 && !(up = calloc(1, up_bytes))) goto out;
    g->upper_bytes += up_bytes;
    g->upper[node] = up;
    g->level[node] = (uint8_t)level;
    g->label[node] = label;
    g->state[node] = tomb ? ST_TOMB : ST_LIVE;
    g->ver_add[node] = 0;
    g->ver_del[node] = tomb ? 0 : HZ_LIVE;
    off = REC_HEADER;
    for (int l = 0; l <= level; l++) {
        uint32_t cnt = get_u32(rec + off);
        uint32_t *lk = links_at(g, node, l);
        lk[0] = cnt;
        memcpy(lk + 1, rec + off + 4, 4 * (size_t)cnt);
        off += 4 + 4 * (size_t)cnt;
    }
    if (tomb) {
        memcpy(g->vecs + (size_t)node * g->vstride, rec + off, g->vbytes);
        g->has_vec[node] = 1;
    }
    if ((size_t)node >= g->hw) g->hw = (size_t)node + 1;
    rc = 0;
out:
    pthread_rwlock_unlock(&g->lock);
    return rc;
}

int hz_hnsw_load_vector(hz_hnsw *g, uint32_t node, const void *stored) {
    pthread_rwlock_wrlock(&g->lock);
    int rc = -2;
    if (node < g->hw && g->state[node] == ST_LIVE && g->has_vec) {
        to_memory(g, stored, g->vecs + (size_t)node * g->vstride);
        g->has_vec[node] = 1;
        rc = 0;
    }
    pthread_rwlock_unlock(&g->lock);
    return rc;
}

long hz_hnsw_finish_load(hz_hnsw *g, uint32_t entry) {
    pthread_rwlock_wrlock(&g->lock);
    long missing = 0;
    g->n_free = 0;
    g->n_live = g->n_tomb = g->n_labels = 0;
    for (size_t i = 0; i < g->label_cap; i++) {
        g->label_head[i] = HZ_NONE;
        g->label_live[i] = 0;
    }
    for (size_t n = g->hw; n > 0; n--) { /* descending, so the smallest free slot is reused first */
        uint32_t id = (uint32_t)(n - 1);
        if (g->state[id] == ST_FREE) g->free_stack[g->n_free++] = id;
    }
    for (size_t n = 0; n < g->hw; n++) {
        uint32_t id = (uint32_t)n;
        if (g->state[id] == ST_FREE) continue;
        if (g->state[id] == ST_LIVE && !(g->has_vec && g->has_vec[id])) {
            /* no stored vector: keep it as a tombstone with a zero vector, removed by the next cleanup */
            memset(g->vecs + n * g->vstride, 0, g->vstride);
            g->state[id] = ST_TOMB;
            g->ver_del[id] = 0;
            missing++;
        }
        uint32_t L = g->label[id];
        g->next_in_label[id] = g->label_head[L];
        g->label_head[L] = id;
        if (g->state[id] == ST_LIVE) {
            g->n_live++;
            if (g->label_live[L]++ == 0) g->n_labels++;
            else g->multi = 1;
        } else {
            g->n_tomb++;
        }
        for (int l = 0; l <= g->level[id]; l++) {
            uint32_t *lk = links_at(g, id, l);
            uint32_t k = 0;
            for (uint32_t i = 1; i <= lk[0]; i++) {
                uint32_t x = lk[i];
                if (x < g->hw && x != id && g->state[x] != ST_FREE && g->level[x] >= l) lk[1 + k++] = x;
            }
            lk[0] = k;
        }
    }
    if (entry >= g->hw || g->state[entry] == ST_FREE) {
        entry = HZ_NONE;
        for (size_t n = 0; n < g->hw; n++)
            if (g->state[n] != ST_FREE && (entry == HZ_NONE || g->level[n] > g->level[entry]))
                entry = (uint32_t)n;
    }
    g->entry = entry;
    g->max_level = entry == HZ_NONE ? -1 : g->level[entry];
    free(g->has_vec);
    g->has_vec = NULL;
    g->n_dirty = 0;
    g->n_freed = 0;
    memset(g->dirty_flag, 0, g->cap);
    pthread_rwlock_unlock(&g->lock);
    return missing;
}
