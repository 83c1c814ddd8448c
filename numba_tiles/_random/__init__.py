"""`Random`'s parts: the calls' rules (`calls`) and their NumPy twins on the simulator (`twins`)."""
