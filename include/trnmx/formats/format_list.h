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
//
// Two FP8 formats share the E4M3 shape and must not be confused:
//   Fp8E4M3 "e4m3"           OCP E4M3FN (ml_dtypes float8_e4m3fn), the MX
//                            element and Trainium3's (NeuronCore-v4) FP8:
//                            no Inf, NaN only S.1111.111, max 448.
//   Fp8E4M3Ieee "e4m3-ieee"  the FP8 E4M3 of NeuronCore-v2/v3 (Trn1, Trn2;
//                            trainium.md section 5, "legacy e4m3"; ml_dtypes
//                            float8_e4m3): IEEE 754-style specials, Inf at
//                            S.1111.000, NaN at S.1111.mmm (m != 0), max 240.
// The second is named by its encoding, not its vendor's history ("legacy")
// nor a chip: "IEEE 754, with NaN and inf" is how ml_dtypes defines it, it is
// what sets it apart from E4M3FN, and it stays true when another machine uses
// it. The token "e4m3" keeps its meaning (OCP), which the MX formats and the
// .mx files already rely on. It takes the next free value, 10, after the
// formats of the second list.
#define TRNMX_FOREACH_FLOAT_FORMAT(X)                                              \
  X(Bf16, 1, "bf16", "BF16 (bfloat16)", "Inf 7F80/FF80; NaN E=FF, M!=0")           \
  X(Fp16, 2, "fp16", "FP16 (IEEE 754 binary16)", "Inf 7C00/FC00; NaN E=1F, M!=0")  \
  X(Fp8E4M3, 3, "e4m3", "FP8 E4M3 (OCP, float8_e4m3fn)", "no Inf; NaN 7F/FF only") \
  X(Fp8E5M2, 4, "e5m2", "FP8 E5M2 (OCP)", "Inf 7C/FC; NaN 7D-7F/FD-FF")            \
  X(Fp6E2M3, 5, "e2m3", "FP6 E2M3 (OCP MX)", "none")                               \
  X(Fp6E3M2, 6, "e3m2", "FP6 E3M2 (OCP MX)", "none")                               \
  X(Fp4E2M1, 7, "e2m1", "FP4 E2M1 (OCP MX)", "none")                               \
  X(Fp8E4M3Ieee, 10, "e4m3-ieee", "FP8 E4M3, IEEE-style (Trainium, float8_e4m3)",  \
    "Inf 78/F8; NaN E=1111, M!=0 (79-7F/F9-FF)")

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
