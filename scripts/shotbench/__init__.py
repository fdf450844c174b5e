"""shotbench: how fast can Dask workers read HDF5 shot files out of S3?"""

__version__ = "0.1.0"
