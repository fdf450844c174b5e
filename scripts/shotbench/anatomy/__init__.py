"""`shotbench anatomy`: where the time of one open goes, per backend (probe, strace, command)."""
