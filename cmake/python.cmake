# python.cmake: the Python package's pytest suite under ctest (next commit).
