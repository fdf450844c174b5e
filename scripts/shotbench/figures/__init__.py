"""The read benchmark's figures, drawn from the tables of `shotbench.analyse`."""
