// The stream registry and the queued writer shared by WaitAdmission,
// WatchResizes and agent Connect, each on its own: fakes stand in for the
// gRPC reactor and for the streams.
#include "broker/service/stream_registry.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/service/queued_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

struct FakeStream {
  int checks = 0;
  std::optional<grpc::StatusCode> closed_with;
  void Check() { ++checks; }
  void Close(const grpc::Status& status) { closed_with = status.error_code(); }
};

TEST(StreamRegistryTest, WakesOnlyTheStreamsOfTheChangedKeys) {
  StreamRegistry<FakeStream> registry;
  auto a = std::make_shared<FakeStream>(), b = std::make_shared<FakeStream>(), c = std::make_shared<FakeStream>();
  ASSERT_TRUE(registry.Add("job-a", a));
  ASSERT_TRUE(registry.Add("job-a", b));  // two streams follow one job
  ASSERT_TRUE(registry.Add("job-c", c));
  registry.Wake({"job-a", "job-x"});
  EXPECT_EQ(a->checks, 1);
  EXPECT_EQ(b->checks, 1);
  EXPECT_EQ(c->checks, 0);
  registry.WakeAll();
  EXPECT_EQ(a->checks, 2);
  EXPECT_EQ(c->checks, 1);
  EXPECT_THAT(registry.Keys(), UnorderedElementsAre("job-a", "job-c"));
}

TEST(StreamRegistryTest, ARemovedStreamIsNeitherWokenNorHeld) {
  StreamRegistry<FakeStream> registry;
  auto a = std::make_shared<FakeStream>(), b = std::make_shared<FakeStream>();
  ASSERT_TRUE(registry.Add("job", a));
  ASSERT_TRUE(registry.Add("job", b));
  registry.Remove("job", a.get());
  registry.Remove("other", b.get());  // not under that key: kept.
  registry.Wake({"job"});
  EXPECT_EQ(a->checks, 0);
  EXPECT_EQ(b->checks, 1);
  EXPECT_EQ(a.use_count(), 1);  // the registry let go of it
  registry.Remove("job", b.get());
  EXPECT_THAT(registry.Keys(), IsEmpty());
}

TEST(StreamRegistryTest, ReplaceHandsBackTheOlderStreamOfTheKey) {
  StreamRegistry<FakeStream> registry;
  auto old_stream = std::make_shared<FakeStream>(), new_stream = std::make_shared<FakeStream>();
  StreamRegistry<FakeStream>::Streams replaced;
  ASSERT_TRUE(registry.Replace("cluster", old_stream, &replaced));
  EXPECT_THAT(replaced, IsEmpty());
  ASSERT_TRUE(registry.Replace("cluster", new_stream, &replaced));
  EXPECT_THAT(replaced, ElementsAre(old_stream));
  registry.WakeAll();
  EXPECT_EQ(old_stream->checks, 0);
  EXPECT_EQ(new_stream->checks, 1);
}

TEST(StreamRegistryTest, CloseAllEndsEveryStreamAndRefusesLaterOnes) {
  StreamRegistry<FakeStream> registry;
  auto a = std::make_shared<FakeStream>(), b = std::make_shared<FakeStream>();
  ASSERT_TRUE(registry.Add("job-a", a));
  ASSERT_TRUE(registry.Add("job-b", b));
  registry.CloseAll(ShuttingDown());
  EXPECT_EQ(a->closed_with, grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(b->closed_with, grpc::StatusCode::UNAVAILABLE);
  auto late = std::make_shared<FakeStream>();
  StreamRegistry<FakeStream>::Streams replaced;
  EXPECT_FALSE(registry.Add("job-c", late));
  EXPECT_FALSE(registry.Replace("job-a", late, &replaced));
  EXPECT_THAT(replaced, IsEmpty());
}

// Stands in for gRPC's reactor: records writes and the final status; the
// test plays the client by completing writes (OnWriteDone).
class FakeReactor {
 public:
  virtual ~FakeReactor() = default;
  virtual void OnWriteDone(bool ok) {}
  virtual void OnCancel() {}
  virtual void OnDone() {}
  void StartWrite(const std::string* message) { written.push_back(*message); }
  void Finish(const grpc::Status& status) {
    ASSERT_FALSE(finished_with.has_value()) << "finished twice";
    finished_with = status;
  }

  std::vector<std::string> written;  // every write started, in order
  std::optional<grpc::Status> finished_with;
};

class FakeWriter : public QueuedWriter<std::string, FakeReactor> {
 public:
  void Start() {}
  void Queue(std::string m) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Send(std::move(m));
  }
  void End() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FinishAfterWrites();
  }
  int unregistered = 0;

 protected:
  void Unregister() override { ++unregistered; }
};

TEST(QueuedWriterTest, OneWriteInFlightAndTheRestInOrderWhenTheReaderCatchesUp) {
  FakeWriter w;
  w.Queue("1");
  w.Queue("2");
  w.Queue("3");
  EXPECT_THAT(w.written, ElementsAre("1"));  // a slow reader: the rest waits
  w.OnWriteDone(true);
  EXPECT_THAT(w.written, ElementsAre("1", "2"));
  w.End();
  w.OnWriteDone(true);
  EXPECT_FALSE(w.finished_with.has_value());  // "3" is still being written
  w.OnWriteDone(true);
  EXPECT_THAT(w.written, ElementsAre("1", "2", "3"));
  ASSERT_TRUE(w.finished_with.has_value());
  EXPECT_TRUE(w.finished_with->ok());
}

TEST(QueuedWriterTest, CloseWaitsForTheWriteInFlightAndDropsTheQueue) {
  FakeWriter w;
  w.Queue("1");
  w.Queue("2");
  w.Close(ShuttingDown());
  EXPECT_FALSE(w.finished_with.has_value());  // gRPC still holds "1"
  w.OnWriteDone(true);
  EXPECT_THAT(w.written, ElementsAre("1"));
  ASSERT_TRUE(w.finished_with.has_value());
  EXPECT_EQ(w.finished_with->error_code(), grpc::StatusCode::UNAVAILABLE);
  w.Queue("3");  // after the end: nothing more is written
  EXPECT_THAT(w.written, ElementsAre("1"));
}

TEST(QueuedWriterTest, AReaderThatWentAwayEndsTheStreamCancelled) {
  FakeWriter w;
  w.Queue("1");
  w.Queue("2");
  w.OnWriteDone(false);
  EXPECT_THAT(w.written, ElementsAre("1"));
  ASSERT_TRUE(w.finished_with.has_value());
  EXPECT_EQ(w.finished_with->error_code(), grpc::StatusCode::CANCELLED);
}

TEST(QueuedWriterTest, HeldUntilOnDoneWhichUnregistersAndGivesTheSlotBack) {
  StreamLimiter limiter(StreamLimits{/*max_total=*/1, /*max_per_peer=*/1});
  std::unique_ptr<StreamLimiter::Slot> slot;
  ASSERT_TRUE(limiter.Acquire("ipv4:10.0.0.1:1000", "Connect", &slot).ok());
  auto w = std::make_shared<FakeWriter>();
  std::weak_ptr<FakeWriter> weak = w;
  w->Hold(w, std::move(slot));
  FakeWriter* raw = w.get();
  w.reset();
  ASSERT_FALSE(weak.expired());  // gRPC still uses the stream
  EXPECT_EQ(limiter.open(), 1);
  raw->OnCancel();
  EXPECT_EQ(raw->finished_with->error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(raw->unregistered, 0);
  auto keep = weak.lock();  // to look at it after OnDone
  raw->OnDone();
  EXPECT_EQ(keep->unregistered, 1);
  EXPECT_EQ(limiter.open(), 0);
  keep.reset();
  EXPECT_TRUE(weak.expired());
}

TEST(QueuedWriterTest, ARefusedStreamEndsAtOnceWithTheReason) {
  auto w = std::make_shared<FakeWriter>();
  w->Refuse(w, grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "too many streams"));
  ASSERT_TRUE(w->finished_with.has_value());
  EXPECT_EQ(w->finished_with->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  w->Queue("1");
  EXPECT_THAT(w->written, IsEmpty());
  w->OnDone();
}

}  // namespace
}  // namespace tidegate::service
