"""Native BM25 accumulation over raw forward entries. See bm25.pyx."""

from typing import Any

import numpy as np
import numpy.typing as npt

class QueryWords:
    def __init__(self, words: list[bytes], pairs: list[list[tuple[int, bool]]]) -> None: ...

def bm25_scores(
    entries: list[Any],
    qw: QueryWords,
    idf: npt.NDArray[np.float64],
    allowed: npt.NDArray[np.uint8],
    allowed_tol: npt.NDArray[np.uint8],
    avgdl: npt.NDArray[np.float64],
    weight: npt.NDArray[np.float64],
    k1: float,
    b: float,
) -> npt.NDArray[np.float64]: ...
