// Eigen probe: the headers compile with C++20 and Eigen::bfloat16 exists
// (peer_conversions_test.cc compares with it).
#include <Eigen/Core>

int main() { return static_cast<float>(Eigen::bfloat16(1.0f)) == 1.0f ? 0 : 1; }
