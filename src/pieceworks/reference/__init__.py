"""Readable pure-Python twins of every algorithm, step by step as in the textbooks.

They are the oracles the Cython kernels are tested against, and a teaching
aid: each module follows one walkthrough and says so. Nothing here is fast.
"""
