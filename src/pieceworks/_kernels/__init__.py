"""The hot loops, in Cython: one ``.pyx`` (with ``.pxd`` and ``.pyi``) per kernel."""
