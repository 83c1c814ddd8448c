"""`Solver`'s parts: the call's rule (`calls`) and its NumPy twin on the simulator (`twins`)."""
