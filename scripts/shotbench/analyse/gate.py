"""The regression gate's settings, apart from the statistics that apply them.

`shotbench compare` registers its arguments with these defaults; keeping them here lets the
command line start without importing pandas and scipy (seconds per invocation).
"""

from __future__ import annotations

ALPHA = 0.05  # the adjusted p a slowdown must fall below
THRESHOLD = 1.10  # the regression a gate fails on: 10 % slower
ADJUSTMENT_NAMES = ("fdr", "holm")  # corrections over the cases (stats.ADJUSTMENTS)
