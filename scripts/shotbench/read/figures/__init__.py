"""The read benchmark's figures, drawn from the tables of `read.analyse`."""
