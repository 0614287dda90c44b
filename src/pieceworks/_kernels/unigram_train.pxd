# cython: language_level=3
# distutils: language = c++
"""C-level API of the Unigram trainer kernels (see unigram_train.pyx)."""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libcpp.vector cimport vector


ctypedef struct TNode:
    int32_t start      # char position
    int32_t end
    int32_t id         # piece id, or -1 for an unknown char
    double score


ctypedef struct Work:
    vector[int32_t] cb          # byte offset of each char boundary
    vector[TNode] nodes         # in start order
    vector[int32_t] start_off   # nodes starting at s: nodes[start_off[s]:start_off[s+1]]
    vector[int32_t] end_off     # CSR by end position
    vector[int32_t] by_end
    vector[double] alpha
    vector[double] beta
    vector[double] best
    vector[int32_t] back
    vector[int32_t] path
    vector[double] acc          # per-piece accumulator (Viterbi counts: exact sums of counts)
    vector[int64_t] iacc        # per-piece expected counts in fixed point (order-independent sums)
    double obj
    double total
