"""One module per way of reading a shot file; see registry."""
