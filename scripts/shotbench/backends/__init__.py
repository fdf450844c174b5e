"""One module per way of reading a shot file; `registry` maps names to them."""
