# cython: language_level=3
# distutils: language = c++
"""The job board of a batch encoded on several threads: which chunks are taken and which are done.

Shared by the kernels whose batch jobs split a list of texts into chunks
(unigram.pyx, bytebpe.pyx). A thread takes the next chunk with one atomic
add; a finished chunk is marked under the mutex, and whoever waits for it
is woken. Declared here with its C++ code, so each kernel that cimports it
compiles its own copy (there is no module to import at run time).
"""

cdef extern from *:
    """
    #include <atomic>
    #include <condition_variable>
    #include <mutex>
    #include <vector>
    /* Which chunks of a BatchJob are taken and which are done. A thread takes the next chunk
       with one atomic add; a finished chunk is marked under the mutex, and whoever waits for it
       is woken. */
    struct pw_board {
        std::atomic<Py_ssize_t> next;
        std::mutex m;
        std::condition_variable cv;
        std::vector<char> done;
        std::vector<int> status;
        explicit pw_board(Py_ssize_t n) : next(0), done(n, 0), status(n, 0) {}
        Py_ssize_t take() { return next.fetch_add(1); }
        void finish(Py_ssize_t i, int st) {
            { std::lock_guard<std::mutex> g(m); done[i] = 1; status[i] = st; }
            cv.notify_all();
        }
        bool is_done(Py_ssize_t i) { std::lock_guard<std::mutex> g(m); return done[i] != 0; }
        int status_of(Py_ssize_t i) { std::lock_guard<std::mutex> g(m); return status[i]; }
        void wait(Py_ssize_t i) { std::unique_lock<std::mutex> g(m); cv.wait(g, [&] { return done[i] != 0; }); }
    };
    """
    cppclass pw_board:
        pw_board(Py_ssize_t n) except +
        Py_ssize_t take() noexcept nogil
        void finish(Py_ssize_t i, int status) noexcept nogil
        bint is_done(Py_ssize_t i) noexcept nogil
        int status_of(Py_ssize_t i) noexcept nogil
        void wait(Py_ssize_t i) noexcept nogil
