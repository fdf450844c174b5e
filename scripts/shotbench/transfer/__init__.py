"""`shotbench transfer`: moving shot files in and out of S3, tool against tool, every file verified."""
