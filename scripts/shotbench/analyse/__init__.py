"""From run folders to numbers: summaries, statistics, the decision, comparisons, break-even."""
