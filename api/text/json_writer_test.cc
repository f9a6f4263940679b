#include "api/text/json_writer.h"

#include <limits>

#include "gtest/gtest.h"

namespace tidegate::text {
namespace {

TEST(JsonWriterTest, WritesMembersInTheOrderGivenWithCommas) {
  JsonWriter w;
  w.BeginObject().Key("at").Int(0).Key("type").String("admit").Key("borrowed");
  w.BeginObject().Key("gpu").Int(2).EndObject();
  w.Key("victims").BeginArray().String("a").String("b").EndArray();
  w.Key("adopted").Bool(true).Key("x").Null().EndObject();
  EXPECT_EQ(w.str(),
            R"({"at":0,"type":"admit","borrowed":{"gpu":2},"victims":["a","b"],)"
            R"("adopted":true,"x":null})");
}

TEST(JsonWriterTest, EmptyContainersHaveNoCommas) {
  JsonWriter w;
  w.BeginObject().Key("a").BeginArray().EndArray().Key("o").BeginObject().EndObject().EndObject();
  EXPECT_EQ(w.str(), R"({"a":[],"o":{}})");
}

TEST(JsonWriterTest, EscapesQuotesBackslashesAndControlCharacters) {
  std::string out;
  AppendJsonString("a\"b\\c\n\t\r\b\f\x01\x1f", &out);
  EXPECT_EQ(out, R"("a\"b\\c\n\t\r\b\f\u0001\u001f")");
}

TEST(JsonWriterTest, CopiesUtf8AndSlashesAsTheyAre) {
  std::string out;
  AppendJsonString("k8s:ns/job-é", &out);
  EXPECT_EQ(out, "\"k8s:ns/job-\xc3\xa9\"");
}

TEST(JsonWriterTest, DoublesUseTheShortestRoundTripForm) {
  auto d = [](double v) {
    std::string out;
    AppendJsonDouble(v, &out);
    return out;
  };
  EXPECT_EQ(d(0.5), "0.5");
  EXPECT_EQ(d(2.0), "2");
  EXPECT_EQ(d(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(d(130.25), "130.25");
  EXPECT_EQ(d(1e21), "1e+21");
  EXPECT_EQ(d(-0.0), "0");
  EXPECT_EQ(d(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(d(std::numeric_limits<double>::infinity()), "null");
}

TEST(JsonWriterTest, IntsCoverTheWholeRange) {
  JsonWriter w;
  w.BeginArray()
      .Int(std::numeric_limits<int64_t>::min())
      .Int(std::numeric_limits<int64_t>::max())
      .EndArray();
  EXPECT_EQ(w.str(), "[-9223372036854775808,9223372036854775807]");
}

}  // namespace
}  // namespace tidegate::text
