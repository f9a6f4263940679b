#include "api/tokens/token_file.h"

#include "gtest/gtest.h"

namespace tidegate::tokens {
namespace {

TEST(Sha256HexTest, KnownVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ParseTokenFileTest, MapsEachHashToItsPrincipalSkippingCommentsAndBlankLines) {
  const std::string text = "# the CI's token\n\n  ci " + Sha256Hex("s3cret") + "  \nlead " + Sha256Hex("other") + "\n";
  auto tokens = ParseTokenFile(text, "tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->size(), 2u);
  EXPECT_EQ(tokens->at(Sha256Hex("s3cret")), "ci");
  EXPECT_EQ(tokens->at(Sha256Hex("other")), "lead");
}

TEST(ParseTokenFileTest, APlainOrUpperCaseTokenIsRefusedNamingTheFileAndLine) {
  for (const std::string& bad : {std::string("ci s3cret"), "ci " + std::string(64, 'A'), std::string("ci")}) {
    auto tokens = ParseTokenFile("# header\n" + bad + "\n", "/etc/tidegate/tokens");
    ASSERT_FALSE(tokens.ok()) << bad;
    EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(tokens.status().message(),
              "/etc/tidegate/tokens:2: expected `PRINCIPAL SHA256HEX` (64 lower-case hex digits, from "
              "`tidegate auth hash-token`)");
  }
}

TEST(ParseTokenFileTest, AHashListedTwiceIsRefused) {
  const std::string hash = Sha256Hex("shared");
  auto tokens = ParseTokenFile("a " + hash + "\nb " + hash + "\n", "tokens");
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().message(), "tokens:2: the same token hash is listed twice");
}

}  // namespace
}  // namespace tidegate::tokens
