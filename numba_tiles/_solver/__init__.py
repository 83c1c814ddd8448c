"""`Solver`'s parts: the call's rule (`calls`), its NumPy twin on the simulator (`twins`) and where its operands
lie in shared memory (`layout`)."""
