// OpenBLAS probe: cblas.h compiles and cblas_sgemm links.
#include <cblas.h>

int main() {
  const float a = 2, b = 3;
  float c = 0;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
  return c == 6 ? 0 : 1;
}
