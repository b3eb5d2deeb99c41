"""Native keys of the ranking rules for the documents of one bucket. See bucket.pyx."""

from typing import Any

import numpy as np
import numpy.typing as npt

INVALID: int

class BucketQuery:
    n_cols: int
    def __init__(
        self,
        words: list[bytes],
        entries: list[list[tuple[int, int, bool, bool, int, int]]],
        alts: list[tuple[int, int, int]],
        nodes: list[tuple[int, int, int, int, bool, bool]],
        rules: list[int],
        allowed: npt.NDArray[np.uint8],
        allowed_tol: npt.NDArray[np.uint8],
        weight: npt.NDArray[np.int32],
        max_weight: int,
        by_attribute: bool,
    ) -> None: ...
    def matched(self, entries: list[Any]) -> npt.NDArray[np.uint8]: ...
    def keys(self, entries: list[Any]) -> npt.NDArray[np.int32]: ...
