// The one list of trnmx's number formats (X-macros, as XNNPACK's `.inc`
// lists). Everything that enumerates formats is generated from these lists:
// the Format and MxFormat enums and their info tables (registry.h,
// mx_format.h), the storage types (types.h), the bulk codec overloads
// (bulk.h), the dispatch switches (visit.h) and the tests that iterate over
// formats. Adding a format means one line here, its traits (traits.h) and
// any kernel that is genuinely specific to it.
//
// The numeric values are API: they are the enum values and the format codes
// of the `.mx` container (tools/trnmx/mx_container.h), so an entry never
// changes its value and a new format takes the next free one.
//
// Plain macros, no includes: a list is expanded where its X is defined.
#ifndef TRNMX_FORMATS_FORMAT_LIST_H_
#define TRNMX_FORMATS_FORMAT_LIST_H_

// Small binary floating-point formats (one FloatTraits each): storage type
// trnmx::Name (types.h), traits trnmx::Name##Traits (traits.h), enumerator
// Format::k##Name = value, command-line token, description, special codes.
//
//   X(Name, value, cli_name, description, special_codes)
#define TRNMX_FOREACH_FLOAT_FORMAT(X)                                              \
  X(Bf16, 1, "bf16", "BF16 (bfloat16)", "Inf 7F80/FF80; NaN E=FF, M!=0")           \
  X(Fp16, 2, "fp16", "FP16 (IEEE 754 binary16)", "Inf 7C00/FC00; NaN E=1F, M!=0")  \
  X(Fp8E4M3, 3, "e4m3", "FP8 E4M3 (OCP, float8_e4m3fn)", "no Inf; NaN 7F/FF only") \
  X(Fp8E5M2, 4, "e5m2", "FP8 E5M2 (OCP)", "Inf 7C/FC; NaN 7D-7F/FD-FF")            \
  X(Fp6E2M3, 5, "e2m3", "FP6 E2M3 (OCP MX)", "none")                               \
  X(Fp6E3M2, 6, "e3m2", "FP6 E3M2 (OCP MX)", "none")                               \
  X(Fp4E2M1, 7, "e2m1", "FP4 E2M1 (OCP MX)", "none")

// Scalar formats with codecs of their own (FP32 itself, the E8M0 scale, the
// MXINT8 element): enumerator Format::k##Name = value and command-line token.
// Their FormatInfo is written out in src/formats/format_registry.cc.
//
//   X(Name, value, cli_name)
#define TRNMX_FOREACH_OTHER_FORMAT(X) \
  X(Fp32, 0, "fp32")                  \
  X(ScaleE8M0, 8, "e8m0")             \
  X(MxInt8, 9, "int8")

// MX block formats (formats.md sections 6, 8, 9): enumerator
// MxFormat::k##Name = value (also the `.mx` container code), command-line
// token, element format (Format::k##Element, storage trnmx::Element, traits
// trnmx::Element##Traits), elements per block, MxScaleKind of the block
// scale, and whether a per-tensor FP32 scale comes with it.
//
//   X(Name, value, cli_name, Element, block_size, scale_kind, has_tensor_scale)
#define TRNMX_FOREACH_MX_FORMAT(X)                         \
  X(Mxfp8E4M3, 0, "mxfp8-e4m3", Fp8E4M3, 32, kE8M0, false) \
  X(Mxfp8E5M2, 1, "mxfp8-e5m2", Fp8E5M2, 32, kE8M0, false) \
  X(Mxfp6E2M3, 2, "mxfp6-e2m3", Fp6E2M3, 32, kE8M0, false) \
  X(Mxfp6E3M2, 3, "mxfp6-e3m2", Fp6E3M2, 32, kE8M0, false) \
  X(Mxfp4, 4, "mxfp4", Fp4E2M1, 32, kE8M0, false)          \
  X(Mxint8, 5, "mxint8", MxInt8, 32, kE8M0, false)         \
  X(Nvfp4, 6, "nvfp4", Fp4E2M1, 16, kUe4m3, true)

#endif  // TRNMX_FORMATS_FORMAT_LIST_H_
