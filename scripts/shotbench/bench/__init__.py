"""The reading benchmark: plan, run, record and analyse Dask reads of shot files."""
