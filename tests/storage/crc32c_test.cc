#include "storage/crc32c.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace leasekeeper::storage {
namespace {

// RFC 3720 (iSCSI) appendix B.4 check values.
TEST(Crc32c, MatchesPublishedCheckValues) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(Crc32c, HardwareAndTablePathsAgreeAndExtendIsIncremental) {
  std::mt19937 rng(7);
  for (int n = 0; n < 300; ++n) {
    std::string data(n, '\0');
    for (char& c : data) c = static_cast<char>(rng());
    const uint32_t whole = Crc32c(data);
    EXPECT_EQ(internal::Crc32cExtendPortable(0, data.data(), data.size()),
              whole);
    const size_t cut = n / 3;
    EXPECT_EQ(Crc32cExtend(Crc32cExtend(0, data.data(), cut),
                           data.data() + cut, data.size() - cut),
              whole);
  }
}

}  // namespace
}  // namespace leasekeeper::storage
