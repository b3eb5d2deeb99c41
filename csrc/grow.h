/* A growable array: doubles its capacity until `need` items of `item` bytes fit (the first capacity
 * is `first`). 0, or -1 on overflow or OOM (the array is then unchanged). Shared by the C files. */
#ifndef HZ_GROW_H
#define HZ_GROW_H

#include <stdint.h>
#include <stdlib.h>

static inline int grow(void **p, size_t *cap, size_t need, size_t item, size_t first)
{
    if (need <= *cap) {
        return 0;
    }
    size_t c = *cap ? *cap : first;
    while (c < need) {
        if (c > SIZE_MAX / 2 / item) {
            return -1;
        }
        c *= 2;
    }
    void *q = realloc(*p, c * item);
    if (q == NULL) {
        return -1;
    }
    *p = q;
    *cap = c;
    return 0;
}

#endif /* HZ_GROW_H */
