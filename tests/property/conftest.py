"""Hypothesis profiles for the property tests.

`HANZO_HYPOTHESIS_PROFILE=sanitize` (what `./dev test` sets when it runs the native property tests against
the ASan/UBSan build in build/sanitize): no deadline, since the instrumented code runs several times slower,
and fewer examples for the tests that do not set their own count.
"""

import os

from hypothesis import settings

settings.register_profile("sanitize", deadline=None, max_examples=50)

if os.environ.get("HANZO_HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HANZO_HYPOTHESIS_PROFILE"])
