# MX scale rules and the scalar MX block reference (issue 3 item 2).
trnmx_add_gtest(formats_mx_unit_test
  SOURCES scale_rule_test.cc
  LABELS unit)

trnmx_add_gtest(formats_mx_exhaustive_test
  SOURCES scale_rule_exhaustive_test.cc
  LABELS exhaustive TIMEOUT 1800)

# Packed FP4 / FP6 element layouts (formats.md section 9).
trnmx_add_gtest(formats_mx_pack_test
  SOURCES mx_pack_test.cc
  LABELS unit)

# MX tensors: layout, tensor API, NVFP4, GGML MXFP4 (issue 3).
trnmx_add_gtest(formats_mx_tensor_test
  SOURCES mx_tensor_test.cc xorwow_test.cc
  LABELS unit threads)

trnmx_add_gtest(formats_mx_tensor_exhaustive_test
  SOURCES mx_tensor_exhaustive_test.cc
  LABELS exhaustive TIMEOUT 1800)
