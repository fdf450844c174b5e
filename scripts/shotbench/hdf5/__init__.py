"""The shot-file format and libhdf5 itself: schema, synthetic files, ROS3 opening, block cache, settings read back."""
