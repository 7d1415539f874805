// The format list (format_list.h) and its visitors (visit.h): the enum values
// are API and must not move, every list entry reaches the info tables and
// the visitors, and the visitors hand out the right compile-time types.
#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>
#include <vector>

#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/registry.h"
#include "trnmx/formats/visit.h"

namespace trnmx {
namespace {

TEST(FormatList, EnumValuesArePinned) {
  // On-disk codes (.mx container) and the public enum values.
  static_assert(static_cast<int>(Format::kFp32) == 0 && static_cast<int>(Format::kBf16) == 1 &&
                static_cast<int>(Format::kFp16) == 2 && static_cast<int>(Format::kFp8E4M3) == 3 &&
                static_cast<int>(Format::kFp8E5M2) == 4 && static_cast<int>(Format::kFp6E2M3) == 5 &&
                static_cast<int>(Format::kFp6E3M2) == 6 && static_cast<int>(Format::kFp4E2M1) == 7 &&
                static_cast<int>(Format::kScaleE8M0) == 8 && static_cast<int>(Format::kMxInt8) == 9 &&
                static_cast<int>(Format::kFp8E4M3Ieee) == 10);
  static_assert(static_cast<int>(MxFormat::kMxfp8E4M3) == 0 &&
                static_cast<int>(MxFormat::kMxfp8E5M2) == 1 &&
                static_cast<int>(MxFormat::kMxfp6E2M3) == 2 &&
                static_cast<int>(MxFormat::kMxfp6E3M2) == 3 && static_cast<int>(MxFormat::kMxfp4) == 4 &&
                static_cast<int>(MxFormat::kMxint8) == 5 && static_cast<int>(MxFormat::kNvfp4) == 6);
  EXPECT_EQ(AllFormats().size(), kNumFormats);
  for (std::size_t i = 0; i < AllFormats().size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(AllFormats()[i].format), i);
  }
}

TEST(FormatList, FloatVisitorMatchesTypesAndInfo) {
  std::vector<Format> seen;
  ForEachFloatFormat([&](auto code) {
    using Code = decltype(code);
    using Traits = typename Code::Traits;
    const Format f = kFormatOf<Code>;
    seen.push_back(f);
    EXPECT_TRUE(IsFloatFormat(f));
    const FormatInfo& info = GetFormatInfo(f);
    EXPECT_EQ(info.total_bits, Traits::kTotalBits) << info.name;
    EXPECT_EQ(info.max_normal, Traits::kMaxNormal) << info.name;
    EXPECT_EQ(sizeof(typename Code::Storage), Traits::kTotalBits > 8 ? 2u : 1u) << info.name;
    bool same = false;
    EXPECT_TRUE(VisitFloatFormat(f, [&](auto other) {
      same = std::is_same_v<decltype(other), Code>;
    }));
    EXPECT_TRUE(same) << info.name;
  });
  EXPECT_EQ(seen.size(), 8u);
  // The formats with codecs of their own are not float formats.
  for (const Format f : {Format::kFp32, Format::kScaleE8M0, Format::kMxInt8}) {
    EXPECT_FALSE(IsFloatFormat(f));
    EXPECT_FALSE(VisitFloatFormat(f, [](auto) { FAIL() << "visited a non-float format"; }));
  }
}

TEST(FormatList, MxVisitorMatchesInfoTable) {
  std::size_t next = 0;
  ForEachMxFormat([&](auto tag) {
    using Tag = decltype(tag);
    const MxFormatInfo& info = GetMxFormatInfo(Tag::kFormat);
    EXPECT_EQ(static_cast<std::size_t>(Tag::kFormat), next++) << info.name;
    EXPECT_EQ(&Tag::kInfo, &info);
    EXPECT_EQ(info.element_bits, Tag::Traits::kTotalBits) << info.name;
    EXPECT_EQ(info.block_bytes, info.block_size * Tag::Traits::kTotalBits / 8) << info.name;
    EXPECT_EQ(GetFormatInfo(info.element).total_bits, info.element_bits) << info.name;
    // VisitMxFormat reaches the same tag and returns the visitor's value.
    EXPECT_EQ(VisitMxFormat(Tag::kFormat,
                            [](auto t) { return static_cast<int>(decltype(t)::kFormat); }),
              static_cast<int>(Tag::kFormat));
  });
  EXPECT_EQ(next, std::size(kMxFormatInfos));
  // An invalid value calls nothing and gives the value-initialised result.
  EXPECT_EQ(VisitMxFormat(static_cast<MxFormat>(200), [](auto) { return 7; }), 0);
}

TEST(FormatList, OcpMxFormatsAreAllButNvfp4) {
  std::vector<MxFormat> want;
  for (const MxFormatInfo& info : AllMxFormats()) {
    if (info.format != MxFormat::kNvfp4) want.push_back(info.format);
  }
  EXPECT_EQ(std::vector<MxFormat>(kOcpMxFormats.begin(), kOcpMxFormats.end()), want);
  EXPECT_FALSE(IsOcpMxFormat(MxFormat::kNvfp4));
}

}  // namespace
}  // namespace trnmx
