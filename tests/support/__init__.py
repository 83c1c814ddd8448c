"""What the tests share: kernels and their NumPy references (computed here, independently of the simulator's
twins), the compiler under test, the misuse table, SASS readers and program observers."""
