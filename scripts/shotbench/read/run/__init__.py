"""Running a plan: orchestrator, per-environment drivers, Dask workers, staging, resume."""
