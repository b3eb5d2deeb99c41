"""String distances as the Rust crates compute them (for "did you mean" suggestions)."""

from __future__ import annotations

__all__ = ["damerau_levenshtein", "osa_distance"]


def damerau_levenshtein(a: str, b: str) -> int:
    """Unrestricted Damerau-Levenshtein distance (strsim's `damerau_levenshtein`)."""
    if not a or not b:
        return len(a) or len(b)
    width, big = len(a) + 2, len(a) + len(b)
    dist = [0] * (width * (len(b) + 2))
    dist[0] = big
    for i in range(len(a) + 1):
        dist[(i + 1) + 0 * width], dist[(i + 1) + 1 * width] = big, i
    for j in range(len(b) + 1):
        dist[0 + (j + 1) * width], dist[1 + (j + 1) * width] = big, j
    last_row: dict[str, int] = {}
    for i in range(1, len(a) + 1):
        db = 0
        for j in range(1, len(b) + 1):
            k = last_row.get(b[j - 1], 0)
            same = a[i - 1] == b[j - 1]
            substitution = dist[i + j * width] + (0 if same else 1)
            db_next = j if same else db
            dist[(i + 1) + (j + 1) * width] = min(
                substitution,
                dist[i + (j + 1) * width] + 1,
                dist[(i + 1) + j * width] + 1,
                dist[k + db * width] + (i - k - 1) + 1 + (j - db - 1),
            )
            db = db_next
        last_row[a[i - 1]] = i
    return dist[(len(a) + 1) + (len(b) + 1) * width]


def osa_distance(a: str, b: str, limit: int = 2) -> int:
    """Optimal string alignment distance (strsim's `osa_distance`: Levenshtein counting an adjacent
    transposition as one edit), capped at `limit + 1`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return min(prev[-1], limit + 1)
