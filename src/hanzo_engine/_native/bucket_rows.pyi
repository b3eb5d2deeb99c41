"""The best rows of a keyed bucket. See bucket_rows.pyx."""

import numpy as np
import numpy.typing as npt

def rank_rows(
    cols: npt.NDArray[np.int64], docids: npt.NDArray[np.int64], want: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]: ...
def order_rows(
    cols: npt.NDArray[np.int64],
    raw: npt.NDArray[np.float64],
    docids: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    want: int,
) -> npt.NDArray[np.int64]: ...
