"""A downstream package, as a library built on numba_tiles would be: ``tiles_extras`` declares its own
intrinsics over its own C++ header with `numba_tiles.extending`, and device functions that call
them; ``kernels`` (another module) calls those device functions."""
