// A broken MPFR installation: the header does not compile.
#error "broken mpfr.h (tests/configure/broken_peers)"
