// oneDNN probe: the C++ API header compiles and the library links.
#include <dnnl.hpp>

int main() { return dnnl::version()->major > 0 ? 0 : 1; }
