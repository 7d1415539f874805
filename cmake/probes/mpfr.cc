// MPFR probe: mpfr.h compiles and MPFR + GMP link.
#include <mpfr.h>

int main() {
  mpfr_t x;
  mpfr_init2(x, 24);
  mpfr_set_d(x, 1.5, MPFR_RNDN);
  const int ok = mpfr_get_d(x, MPFR_RNDN) == 1.5;
  mpfr_clear(x);
  return ok ? 0 : 1;
}
